"""Checkpoint files of a learner: finding, reading (with fallback) and rotating them.

A checkpoint is written atomically, so a process killed mid-save leaves the previous one
intact plus a hidden ``.ckpt_iter*.tmp`` file, which the next run removes. A newest
checkpoint that still cannot be read (truncated or damaged outside ding_lite) is skipped
with a warning naming it, and the one before it is loaded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import safe_torch_load
from ding_lite.utils.log import get_logger

CKPT_FORMAT = "ding_lite.ckpt.v1"
_CKPT_RE = re.compile(r"^ckpt_iter(\d+)\.pt$")
_TMP_RE = re.compile(r"^\..+\.tmp$")  # what utils.file_io leaves behind when killed mid-write


def checkpoints(folder: str | Path) -> list[Path]:
    """The ``ckpt_iter*.pt`` files in ``folder``, newest (highest iteration) first."""
    folder = Path(folder)
    found = [
        (int(m.group(1)), p) for p in folder.glob("ckpt_iter*.pt") if (m := _CKPT_RE.match(p.name))
    ]
    return [p for _, p in sorted(found, reverse=True)]


def latest_checkpoint(folder: str | Path) -> Path | None:
    """Returns the checkpoint of the highest iteration in ``folder``, or None."""
    found = checkpoints(folder)
    return found[0] if found else None


def remove_stale_tmp(folder: str | Path) -> list[Path]:
    """Removes the hidden ``.*.tmp`` files an atomic write left when its process was killed.

    Only this folder, only files of that pattern; call it before this run writes there.
    """
    folder = Path(folder)
    removed = []
    if folder.is_dir():
        for path in folder.iterdir():
            if _TMP_RE.match(path.name) and path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
                removed.append(path)
    if removed:
        get_logger("learner").info(f"removed {len(removed)} unfinished temp file(s) in {folder}")
    return removed


def _read_one(path: Path) -> dict[str, Any]:
    state = safe_torch_load(path)
    if not isinstance(state, dict) or state.get("format") != CKPT_FORMAT:
        raise CheckpointError(f"{path} is not a ding_lite checkpoint")
    return state


def read_checkpoint(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """Reads a checkpoint file, or the newest readable ``ckpt_iter*.pt`` of a folder.

    Returns:
        ``(the file read, its content)``.

    Raises:
        CheckpointError: missing, corrupt, or not a ding_lite checkpoint (for a folder: no
            readable checkpoint in it).
    """
    path = Path(path)
    if not path.is_dir():
        return path, _read_one(path)
    found = checkpoints(path)
    if not found:
        raise CheckpointError(f"no checkpoint (ckpt_iter*.pt) in {path}")
    errors = []
    for candidate in found:
        try:
            state = _read_one(candidate)
        except CheckpointError as err:
            get_logger("learner").warning(f"skipping unreadable checkpoint: {err}")
            errors.append(str(err))
            continue
        return candidate, state
    raise CheckpointError(f"no readable checkpoint in {path}: {errors[0]}")


def rotate_checkpoints(folder: str | Path, keep: int) -> None:
    """Deletes all but the newest ``keep`` iteration checkpoints."""
    for old in checkpoints(folder)[keep:]:
        old.unlink(missing_ok=True)
