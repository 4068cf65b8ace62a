"""Which config and checkpoint ``ding-lite eval`` and ``render`` use for the paths given.

``RUN_DIR`` (positional): the run's ``config.json`` and ``ckpt/best.pt`` (the policy
``load_policy`` gives), else its newest readable checkpoint. ``--ckpt PATH``: a checkpoint
file, or the newest checkpoint of a ``ckpt/`` folder or of a run dir's ``ckpt/``; the config
is ``-c`` or, without it, the ``config.json`` of the run dir that holds the checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.worker.learner.checkpoint import BEST_CKPT, latest_valid_checkpoint, read_checkpoint


@dataclass
class RunPaths:
    """What an eval or render reads.

    Attributes:
        config: the experiment name or file given with ``-c``, or the run's saved config.
        ckpt: a checkpoint file, or a folder whose newest readable checkpoint is read.
        note: one line for the user when the choice was not the obvious one (else "").
    """

    config: str | dict[str, Any]
    ckpt: Path
    note: str = ""


def locate(run_path: str | None, config: str | None, ckpt: str | None) -> RunPaths:
    """The config and checkpoint for ``RUN_DIR``, ``-c`` and ``--ckpt`` as given.

    Raises:
        ConfigError: neither a run dir nor ``--ckpt``, a missing path, or no config to use.
        CheckpointError: the run dir holds no readable checkpoint.
    """
    if run_path is None and ckpt is None:
        raise ConfigError("give a run dir (ding-lite eval RUN_DIR) or --ckpt PATH")
    if ckpt is not None:
        path = Path(ckpt)
        if not path.exists():
            raise ConfigError(f"--ckpt {ckpt}: checkpoint not found (no such file or folder)")
        if (path / "ckpt").is_dir():  # a run dir: its newest checkpoint, as for its ckpt/
            path = path / "ckpt"
        holder = Path(run_path) if run_path is not None else run_dir_of(path)
        return RunPaths(config or _saved_config(holder, "--ckpt " + ckpt), path)
    assert run_path is not None  # checked above: one of the two is given
    folder = Path(run_path)
    if not folder.is_dir():
        raise ConfigError(f"{run_path}: no such run dir")
    if not (folder / "ckpt").is_dir() and not (folder / "config.json").is_file():
        raise ConfigError(f"{run_path}: not a run dir (no ckpt/ folder, no config.json)")
    chosen, note = _best_or_newest(folder / "ckpt")
    return RunPaths(config or _saved_config(folder, run_path), chosen, note)


def run_dir_of(path: Path) -> Path:
    """The run dir above a checkpoint file or a ``ckpt/`` folder."""
    folder = path if path.is_dir() else path.parent
    return folder.parent


def _saved_config(run_path: Path, given: str) -> dict[str, Any]:
    file = run_path / "config.json"
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{given}: {file} not found; pass the experiment it was trained with (-c NAME)"
        ) from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{file} is not valid JSON ({err})") from None


def _best_or_newest(folder: Path) -> tuple[Path, str]:
    best = folder / BEST_CKPT
    reason = f"no {BEST_CKPT} in {folder}"
    if best.is_file():
        try:
            read_checkpoint(best)
            return best, ""
        except CheckpointError as err:
            reason = str(err)
    newest = latest_valid_checkpoint(folder)
    if newest is None:
        raise CheckpointError(f"no readable checkpoint ({BEST_CKPT} or ckpt_iter*.pt) in {folder}")
    return newest, f"{reason}; evaluating the newest checkpoint, {newest.name}"
