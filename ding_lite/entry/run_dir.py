"""The experiment dir of a run: choosing it, the saved config, result.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from easydict import EasyDict

from ding_lite.config.config import to_plain
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.file_io import atomic_write_json


def choose_exp_dir(cfg: EasyDict, resuming: bool = False) -> Path:
    """Returns the run's folder (not created yet).

    With ``exp_dir`` unset: ``./<exp_name>``, or ``./<exp_name>_N`` (next free N) when that
    already holds a run. An explicit ``exp_dir`` that already holds a run is refused unless
    resuming, so no earlier run is overwritten.
    """
    if cfg.exp_dir:
        path = Path(cfg.exp_dir)
        if (path / "config.json").exists() and not resuming:
            raise ConfigError(
                f"{path} already holds a run; resume it with --resume {path} or pick another "
                "--exp-dir"
            )
    else:
        path = Path(cfg.exp_name)
        n = 0
        while (path / "config.json").exists():
            n += 1
            path = Path(f"{cfg.exp_name}_{n}")
    return path


def save_config(cfg: EasyDict, path: Path) -> None:
    """Writes the resolved config to ``<path>/config.json`` (creating the folder)."""
    atomic_write_json(to_plain(cfg), path / "config.json")


def load_saved_config(exp_dir: str | Path) -> dict[str, Any]:
    """Reads the config a run saved, for resuming it.

    Raises:
        ConfigError: the folder holds no readable config.json.
    """
    path = Path(exp_dir) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"cannot resume: {path} not found") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"cannot resume: {path} is not valid JSON ({err})") from None


def write_result(result: dict[str, Any], path: Path) -> None:
    atomic_write_json(result, path / "result.json")
