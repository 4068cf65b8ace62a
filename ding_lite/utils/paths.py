"""Paths a task may name, rollout and checkpoint file names: no torch, so the coordinator
can use them.

Every path that arrives in a task or a task result is checked with :func:`resolve_inside`
before anything reads, moves or deletes it: symlinks and ``..`` are resolved first, so a path
that only looks as if it were inside the run's folders is refused.

A rollout file's name carries what the coordinator needs to adopt it without loading a
tensor: ``<path_data>/<collector>/{seq:08d}_v{policy_version}_n{samples}.pt``. The writer
creates it atomically (a hidden ``.*.tmp`` file renamed into place), so a file with a
rollout name is always complete.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TypedDict

from ding_lite.utils.errors import DingLiteError

# A run's best policy so far (highest evaluation mean), beside the periodic checkpoints.
BEST_CKPT = "best.pt"
# A periodic checkpoint: ``ckpt_iter{iteration:08d}.pt`` (CKPT_GLOB also finds odd ones).
CKPT_GLOB = "ckpt_iter*.pt"
_CKPT_RE = re.compile(r"^ckpt_iter(\d+)\.pt$")

# Canonical numbers only (no leading zeros but in the 8-digit seq), so one rollout has one
# name and parse(format(x)) == x.
_ROLLOUT_RE = re.compile(r"^(\d{8,12})_v(0|[1-9]\d{0,11})_n([1-9]\d{0,9})\.pt$")
# A collector's id names its folder: letters, digits, '.', '_' and '-', never '.' or '..'.
_WORKER_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class UnsafePathError(DingLiteError, ValueError):
    """A path from a task or a result is not inside the folder it must be in."""


class RolloutMeta(TypedDict):
    """What a rollout file's name (and folder) says about it."""

    path: str  # the path as given
    collector: str  # the writer's worker id (its folder's name)
    seq: int  # the rollout's sequence number within its collector
    policy_version: int  # the policy version that collected it
    size: int  # samples in the file


def _resolve(path: object) -> Path:
    if not isinstance(path, str | os.PathLike):
        raise UnsafePathError(f"a path must be a string, got {type(path).__name__}")
    try:
        return Path(os.path.realpath(os.fspath(path)))
    except (OSError, ValueError) as err:  # e.g. an embedded NUL byte
        raise UnsafePathError(f"not a usable path: {str(path)[:200]!r} ({err})") from None


def resolve_inside(path: object, root: str | os.PathLike) -> Path:
    """Resolves ``path`` (symlinks, ``..``, relative to the working dir) and checks that the
    result lies strictly inside ``root`` (also resolved).

    Returns:
        The resolved path.

    Raises:
        UnsafePathError: ``path`` is not a path, or resolves to ``root`` itself or outside
            it; ``root`` is empty.
    """
    if not isinstance(root, str | os.PathLike) or not os.fspath(root):
        # An empty root would mean the working dir: refuse rather than guess.
        raise UnsafePathError(f"no folder to check {str(path)[:200]!r} against; refused")
    resolved = _resolve(path)
    base = _resolve(root)
    if resolved == base or base not in resolved.parents:
        raise UnsafePathError(f"path {str(path)[:200]!r} is not inside {base}; refused")
    return resolved


def is_inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Whether ``path`` resolves to somewhere strictly inside ``root`` (see resolve_inside)."""
    try:
        resolve_inside(path, root)
    except UnsafePathError:
        return False
    return True


def is_worker_id(name: str) -> bool:
    """Whether ``name`` may name a worker and its data folder (``[A-Za-z0-9._-]{1,64}``,
    not ``.`` or ``..``)."""
    return isinstance(name, str) and bool(_WORKER_ID_RE.fullmatch(name)) and name not in {".", ".."}


def ckpt_name(iteration: int) -> str:
    """The file name of the periodic checkpoint of ``iteration``: ``ckpt_iter{N:08d}.pt``."""
    return f"ckpt_iter{iteration:08d}.pt"


def parse_ckpt_name(name: str) -> int | None:
    """The iteration a periodic checkpoint's file name says (None for any other name)."""
    m = _CKPT_RE.match(name)
    return int(m.group(1)) if m else None


def rollout_name(seq: int, policy_version: int, samples: int) -> str:
    """The file name of a rollout: ``{seq:08d}_v{policy_version}_n{samples}.pt``.

    Raises:
        ValueError: a negative number, or ``samples`` < 1.
    """
    if seq < 0 or policy_version < 0 or samples < 1:
        raise ValueError(
            f"a rollout needs seq >= 0, policy_version >= 0 and samples >= 1, got "
            f"seq={seq}, policy_version={policy_version}, samples={samples}"
        )
    return f"{seq:08d}_v{policy_version}_n{samples}.pt"


def parse_rollout_path(path: str | os.PathLike) -> RolloutMeta | None:
    """Reads a rollout file's metadata from its name and folder (the file is not opened).

    Returns:
        ``{"path", "collector", "seq", "policy_version", "size"}``, or None for temp files
        and any other name (or a folder that is not a valid worker id).
    """
    p = Path(path)
    m = _ROLLOUT_RE.fullmatch(p.name)
    if m is None or not is_worker_id(p.parent.name):
        return None
    return RolloutMeta(
        path=os.fspath(path),
        collector=p.parent.name,
        seq=int(m.group(1)),
        policy_version=int(m.group(2)),
        size=int(m.group(3)),
    )


def scan_rollouts(path_data: str | os.PathLike, links: list[str] | None = None) -> list[dict]:
    """Lists the complete rollout files under ``<path_data>/<collector>/``.

    Temp files, other names, symlinks, folders and anything resolving outside ``path_data``
    are skipped. Sorted by collector, then sequence number. ``links``, if given, receives
    the symbolic links found (collector folders and files; never followed).

    Returns:
        Dicts ``{"path", "collector", "seq", "policy_version", "size", "created"}`` (the
        shape ``write_rollout`` returns; ``created`` is the file's modification time).
    """
    root = Path(path_data)
    found: list[dict] = []
    try:
        folders = [d for d in root.iterdir() if is_worker_id(d.name)]
    except OSError:  # no data folder (yet): nothing to adopt
        return found
    for folder in folders:
        if folder.is_symlink():
            if links is not None:
                links.append(os.fspath(folder))
            continue
        if not folder.is_dir():
            continue
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if links is not None and entry.is_symlink():
                links.append(entry.path)
            meta = parse_rollout_path(entry.path)
            if meta is None or not entry.is_file(follow_symlinks=False):
                continue
            if not is_inside(entry.path, root):
                continue
            try:
                stat = entry.stat(follow_symlinks=False)
            except OSError:  # consumed between listing and stat
                continue
            found.append({**meta, "created": stat.st_mtime})
    found.sort(key=lambda m: (m["collector"], m["seq"]))
    return found
