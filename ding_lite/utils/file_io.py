"""Atomic file writes and safe tensor-file reads.

Every file another process may read is written to a temporary file in the same folder,
fsynced and moved into place with ``os.replace``, so a reader sees the old file or the new
one, never a torn one. Reads use ``torch.load(weights_only=True)``: no pickle is ever run.
torch is imported only by the two functions that need it, so code that moves metadata only
(the coordinator) can write JSON atomically without it.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import CheckpointError, DiskFullError, is_disk_full

# ``.<name>.<random>.tmp``: the temp file of _write_then_replace (mkstemp's prefix and
# suffix below), left behind only when its process was killed mid-write.
_ZIP_MAGIC = b"PK\x03\x04"
_STALE_TMP_RE = re.compile(r"^\..+\.[A-Za-z0-9_]+\.tmp$")


def _atomic_write(path: str | os.PathLike, write: Any, durable: bool = True) -> None:
    try:
        _write_then_replace(Path(path), write, durable)
    except DiskFullError:
        raise
    except OSError as err:
        if is_disk_full(err):
            raise DiskFullError.writing(path) from None
        raise


def _write_then_replace(path: Path, write: Any, durable: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if not durable:
        return
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
    """Saves ``obj`` (tensors, numbers, strings, lists, dicts only) atomically to ``path``.

    Raises:
        DiskFullError: the disk (or quota) is full; no partial file is left.
    """
    import torch

    # Serialized in memory, then written by Python: torch's zip writer reports a full disk as
    # an opaque RuntimeError ("unexpected pos"), a plain file write as OSError(ENOSPC).
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    _atomic_write(path, lambda f: f.write(buffer.getbuffer()))


def atomic_write_bytes(data: bytes, path: str | os.PathLike) -> None:
    """Writes ``data`` atomically to ``path``: readers see the old file or the new one.

    Raises:
        DiskFullError: the disk (or quota) is full; no partial file is left.
    """
    _atomic_write(path, lambda f: f.write(data))


def atomic_write_text(text: str, path: str | os.PathLike, durable: bool = True) -> None:
    """Writes ``text`` atomically to ``path`` (UTF-8).

    Readers see the old file or the new one, never a part. ``durable=False`` skips the
    fsyncs: the file may be lost in a power cut (fine for one rewritten every second).

    Raises:
        DiskFullError: the disk (or quota) is full; no partial file is left.
    """
    _atomic_write(path, lambda f: f.write(text.encode("utf-8")), durable)


def atomic_write_json(obj: Any, path: str | os.PathLike) -> None:
    """Writes ``obj`` as indented JSON atomically to ``path``."""
    atomic_write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", path)


def remove_stale_tmp(folder: str | os.PathLike) -> list[Path]:
    """Removes the ``.<name>.<random>.tmp`` files an atomic write left when killed mid-write.

    Only files of that pattern directly in ``folder`` (no recursion, no links); call it
    before this run writes there, while no other process writes to ``folder``.

    Returns:
        The files removed (empty when ``folder`` does not exist).
    """
    folder = Path(folder)
    removed = []
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if _STALE_TMP_RE.match(path.name) and path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def safe_torch_load(path: str | os.PathLike, map_location: Any = "cpu") -> Any:
    """Loads a tensor file with ``weights_only=True``.

    Raises:
        CheckpointError: the file is missing, empty, truncated, or not a readable tensor
            file (one line naming it).
    """
    import torch

    path = Path(path)
    try:
        # One open for the check and the load: a file deleted meanwhile (an older policy
        # version pruned by its writer) stays readable through the open handle.
        f = path.open("rb")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise CheckpointError(f"checkpoint not found: {path}") from None
    try:
        with f:
            head = f.read(4)
            if not head:
                raise CheckpointError(f"cannot read checkpoint {path}: the file is empty")
            if head != _ZIP_MAGIC:  # every file ding_lite saves is torch's zip format
                raise CheckpointError(f"cannot read checkpoint {path}: not a torch tensor file")
            f.seek(0)
            return torch.load(f, map_location=map_location, weights_only=True)
    except CheckpointError:
        raise
    except Exception as err:  # torch raises several types for corrupt or unsafe files
        raise CheckpointError(f"cannot read checkpoint {path}: {_why_unreadable(err)}") from None


def _why_unreadable(err: Exception) -> str:
    text = str(err).strip()
    if "Weights only load failed" in text:
        return "it holds objects other than tensors, numbers and strings (refused unread)"
    # A zip archive cut short fails deep in torch's reader with EINVAL or a zip error.
    if isinstance(err, OSError) or "zip archive" in text or "central directory" in text:
        return "truncated or corrupt (a save cut short, or damaged since)"
    return text.splitlines()[0] if text else type(err).__name__
