"""A run's saved config (``<run dir>/config.json``): written when the run starts, read back
to resume it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from easydict import EasyDict

from ding_lite.config.config import load_experiment, to_plain
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.file_io import atomic_write_json


def save_config(cfg: EasyDict, path: Path) -> None:
    """Writes the resolved config to ``<path>/config.json`` (creating the folder)."""
    atomic_write_json(to_plain(cfg), path / "config.json")


def load_saved_config(run_path: str | Path) -> dict[str, Any]:
    """Reads the config a run saved, for resuming it.

    Raises:
        ConfigError: the folder holds no readable config.json.
    """
    path = Path(run_path) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"cannot resume: {path} not found") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"cannot resume: {path} is not valid JSON ({err})") from None


def resume_config(run_path: str | Path, cfg: Any = None) -> dict[str, Any]:
    """The config a resumed run uses: the one it saved.

    ``cfg`` (a config file, experiment name or dict given beside ``--resume``) only brings
    definitions: a Python file registers the hooks and envs it defines as it runs. Every
    setting it makes must equal the saved one (``exp_dir`` aside).

    Raises:
        ConfigError: no readable config.json, or ``cfg`` sets keys to other values (named).
    """
    saved = load_saved_config(run_path)
    if cfg is None:
        return saved
    differ = []
    for key, value in _leaves(load_experiment(cfg)):
        node: Any = saved
        for part in key.split("."):
            node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
        if key != "exp_dir" and node != json.loads(json.dumps(value)):
            differ.append(key)
    if differ:
        shown = ", ".join(differ[:6]) + (f" and {len(differ) - 6} more" if len(differ) > 6 else "")
        raise ConfigError(
            f"--resume {run_path}: the config given sets {shown} unlike the run's config.json "
            "(beside --resume a config only registers hooks and envs; pass changes as overrides)"
        )
    return saved


_MISSING = object()


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` of every non-dict value in a nested dict."""
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.extend(_leaves(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", value))
    return out
