"""Atomic file writes and safe tensor-file reads.

Every file another process may read is written to a temporary file in the same folder,
fsynced and moved into place with ``os.replace``, so a reader sees the old file or the new
one, never a torn one. Reads use ``torch.load(weights_only=True)``: no pickle is ever run.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from ding_lite.utils.errors import CheckpointError, DiskFullError

_FULL = (errno.ENOSPC, errno.EDQUOT)


def _atomic_write(path: str | os.PathLike, write: Any) -> None:
    try:
        _write_then_replace(Path(path), write)
    except DiskFullError:
        raise
    except OSError as err:
        if err.errno in _FULL:
            raise DiskFullError(
                errno.ENOSPC,
                f"disk full while writing {path}; free some space, then resume the run "
                "with --resume EXP_DIR",
            ) from None
        raise
    except RuntimeError as err:  # torch.save reports a failed write as a RuntimeError
        if "No space left on device" in str(err) or "error code: 28" in str(err):
            raise DiskFullError(errno.ENOSPC, f"disk full while writing {path}") from None
        raise


def _write_then_replace(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    # Make the rename itself durable; not every platform lets us open a folder.
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> None:
    """Saves ``obj`` (tensors, numbers, strings, lists, dicts only) atomically to ``path``."""
    _atomic_write(path, lambda f: torch.save(obj, f))


def atomic_write_text(text: str, path: str | os.PathLike) -> None:
    """Writes ``text`` atomically to ``path`` (UTF-8)."""
    _atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write_json(obj: Any, path: str | os.PathLike) -> None:
    """Writes ``obj`` as indented JSON atomically to ``path``."""
    atomic_write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", path)


def safe_torch_load(path: str | os.PathLike, map_location: Any = "cpu") -> Any:
    """Loads a tensor file with ``weights_only=True``.

    Raises:
        CheckpointError: the file is missing or is not a readable tensor file.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises several types for corrupt or unsafe files
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"cannot read checkpoint {path}: {first_line}") from None
