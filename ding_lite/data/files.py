"""Rollout and policy files on the shared filesystem.

Collectors write one file per rollout under ``<path_data>/<collector>/``, named
``{seq:08d}_v{policy_version}_n{samples}.pt`` (see :mod:`ding_lite.utils.paths`, which the
coordinator reads names with, torch-free); learners publish one file per policy version under
``<path_policy>/``. Every file is written atomically (temp file
in the same folder, fsync, ``os.replace``), holds only tensors, numbers and strings, and is read
with ``torch.load(weights_only=True)``, so no reader ever sees a torn file or runs a pickle.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_torch_save, safe_torch_load
from ding_lite.utils.log import get_logger
from ding_lite.utils.paths import UnsafePathError, is_worker_id, resolve_inside, rollout_name

ROLLOUT_FORMAT = "ding_lite.rollout.v1"
POLICY_FORMAT = "ding_lite.policy.v1"
LEAGUE_DIR = "league"  # a league's frozen members, in the run dir: <name>.pt
_POLICY_RE = re.compile(r"^policy_v(\d+)\.pt$")
_TEMP_RE = re.compile(r"^\..+\.tmp$")  # how utils.file_io names a write in progress


def write_rollout(
    path_data: str | Path,
    collector: str,
    seq: int,
    data: dict[str, torch.Tensor],
    *,
    policy_version: int,
    episode_returns: list[float] | None = None,
    league_matches: list[list[Any]] | None = None,
) -> dict[str, Any]:
    """Writes one rollout as ``<path_data>/<collector>/<seq>_v<version>_n<samples>.pt``.

    Args:
        path_data: the shared data folder.
        collector: the writing collector's id (its own sub-folder).
        seq: the rollout's sequence number within the collector.
        data: flat ``[B, ...]`` tensors (moved to the CPU before writing).
        policy_version: the version of the policy that collected the rollout.
        episode_returns: returns of the episodes that finished during the rollout.
        league_matches: a league's matches that ended during the rollout, ``[opponent,
            outcome]`` each (left out when None).

    Returns:
        ``{"path", "collector", "seq", "policy_version", "size", "created"}`` (JSON-ready;
        the same shape ``ding_lite.utils.paths.scan_rollouts`` lists).

    Raises:
        UnsafePathError: ``collector`` is not a valid worker id, or its folder resolves
            outside ``path_data`` (e.g. a symlink).
        ValueError: ``data`` is empty.
    """
    if not is_worker_id(collector):
        raise UnsafePathError(
            f"collector id {collector!r} cannot name a data folder; use letters, digits, '.',"
            " '_' and '-' (at most 64, not '.' or '..')"
        )
    cpu = {key: value.detach().cpu() for key, value in data.items()}
    size = int(next(iter(cpu.values())).shape[0]) if cpu else 0
    path = Path(path_data) / collector / rollout_name(seq, policy_version, size)
    resolve_inside(path, path_data)
    content = {
        "format": ROLLOUT_FORMAT,
        "collector": collector,
        "seq": seq,
        "policy_version": policy_version,
        "episode_returns": list(episode_returns or []),
        "data": cpu,
    }
    if league_matches is not None:
        content["league_matches"] = league_matches
    atomic_torch_save(content, path)
    return {
        "path": str(path),
        "collector": collector,
        "seq": seq,
        "policy_version": policy_version,
        "size": size,
        "created": time.time(),
    }


def read_rollout(path: str | Path) -> dict[str, Any]:
    """Reads a rollout file.

    Returns:
        ``{"data": {...tensors}, "policy_version", "collector", "seq", "episode_returns"}``.

    Raises:
        CheckpointError: missing, unreadable or not a rollout file.
    """
    content = safe_torch_load(path)
    if not isinstance(content, dict) or content.get("format") != ROLLOUT_FORMAT:
        raise CheckpointError(f"{path} is not a ding_lite rollout file")
    return content


def policy_file(path_policy: str | Path, version: int) -> Path:
    """The file that holds policy ``version``."""
    return Path(path_policy) / f"policy_v{version:08d}.pt"


def write_policy(
    path_policy: str | Path,
    version: int,
    model_state: dict[str, torch.Tensor],
    keep: int = 3,
    league_sheet: dict[str, float] | None = None,
) -> Path:
    """Publishes a policy version atomically, then prunes older versions.

    ``league_sheet``: in a league, the probability of each opponent the collectors draw
    while they act with this version (see :func:`read_policy_sheet`).

    Only versions older than ``version`` are pruned, so that of ``version`` and the older
    ones the newest ``keep`` stay; the version just published is never deleted, and newer
    ones (left by a run that is being resumed) are :func:`remove_newer_policies`' business.
    """
    path = policy_file(path_policy, version)
    state = {key: value.detach().cpu() for key, value in model_state.items()}
    content: dict[str, Any] = {"format": POLICY_FORMAT, "version": version, "model": state}
    if league_sheet is not None:
        content["league_sheet"] = dict(league_sheet)
    atomic_torch_save(content, path)
    older = sorted(v for v in policy_versions(path_policy) if v < version)
    for old in older[: max(len(older) - max(keep - 1, 0), 0)]:
        policy_file(path_policy, old).unlink(missing_ok=True)
    return path


def remove_newer_policies(path_policy: str | Path, version: int) -> list[Path]:
    """Deletes the published versions newer than ``version`` (a resumed learner goes on from
    ``version``: those weights belong to iterations it is about to redo).

    Returns:
        The files deleted.
    """
    removed = []
    for newer in sorted(v for v in policy_versions(path_policy) if v > version):
        path = policy_file(path_policy, newer)
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def reject_file(path: str | Path, rejected_dir: str | Path) -> Path | None:
    """Moves a bad rollout file to ``<rejected_dir>/<collector>_<name>`` for inspection.

    The collector is the name of the file's folder. An existing file of that name is never
    overwritten (a counter is appended). When the move fails, the file is deleted instead,
    so a bad file cannot be handed out again.

    Returns:
        Where the file went, or None when it could only be deleted (or was already gone).
    """
    path = Path(path)
    rejected_dir = Path(rejected_dir)
    stem = f"{path.parent.name}_{path.name}"
    target = rejected_dir / stem
    n = 1
    while target.exists():
        target = rejected_dir / f"{stem}.{n}"
        n += 1
    try:
        rejected_dir.mkdir(parents=True, exist_ok=True)
        # shutil.move copies when path_data is on another filesystem than the exp dir.
        shutil.move(os.fspath(path), os.fspath(target))
        return target
    except OSError as err:
        get_logger("data").warning(f"could not move {path} to {rejected_dir} ({err}); deleting it")
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass
        return None


def read_policy(path: str | Path) -> tuple[int, dict[str, torch.Tensor]]:
    """Reads a published policy: ``(version, model state dict)``.

    Raises:
        CheckpointError: missing, unreadable or not a policy file.
    """
    content = _policy_content(path)
    return int(content["version"]), content["model"]


def read_policy_sheet(path: str | Path) -> tuple[int, dict[str, Any], dict[str, float] | None]:
    """Reads a published policy: ``(version, model state dict, league sheet)``; the sheet
    is None when the file has none, and checked when it has one (member names, finite
    probabilities that sum to 1).

    Raises:
        CheckpointError: missing, unreadable or not a policy file, or a malformed sheet.
    """
    content = _policy_content(path)
    sheet = content.get("league_sheet")
    if sheet is not None:
        ok = isinstance(sheet, dict) and 0 < len(sheet) <= 4096
        ok = ok and all(
            is_worker_id(k) and isinstance(v, float) and v >= 0 for k, v in sheet.items()
        )
        if not (ok and abs(sum(sheet.values()) - 1.0) < 1e-6):
            raise CheckpointError(f"{path} holds a malformed league sheet")
    return int(content["version"]), content["model"], sheet


def _policy_content(path: str | Path) -> dict[str, Any]:
    content = safe_torch_load(path)
    if not isinstance(content, dict) or content.get("format") != POLICY_FORMAT:
        raise CheckpointError(f"{path} is not a ding_lite policy file")
    return content


def member_path(folder: str | Path, name: str) -> Path:
    """The file of the league member ``name`` in ``folder`` (a bad name: CheckpointError)."""
    if not is_worker_id(name):
        raise CheckpointError(f"{name!r:.80} cannot name a league member")
    return Path(folder) / f"{name}.pt"


def write_member(folder: str | Path, name: str, model_state: dict[str, torch.Tensor]) -> Path:
    """Freezes ``model_state`` as the league member ``name`` (written atomically)."""
    path = member_path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {key: value.detach().cpu().clone() for key, value in model_state.items()}
    atomic_torch_save({"league_member": name, "model": state}, path)
    return path


def read_member(folder: str | Path, name: str) -> dict[str, torch.Tensor]:
    """The model state of the league member ``name`` (read ``weights_only``).

    Raises:
        CheckpointError: one line: missing, unreadable, or not that member's file.
    """
    path = member_path(folder, name)
    try:
        saved = safe_torch_load(path)
    except CheckpointError as err:
        raise CheckpointError(f"league member {name!r}: {err}") from None
    if not (isinstance(saved, dict) and saved.get("league_member") == name):
        raise CheckpointError(f"{path} is not the league member {name!r}")
    if not isinstance(saved.get("model"), dict):
        raise CheckpointError(f"{path} holds no model")
    return saved["model"]


def policy_versions(path_policy: str | Path) -> list[int]:
    """The policy versions present in ``path_policy``."""
    folder = Path(path_policy)
    if not folder.is_dir():
        return []
    return [int(m.group(1)) for p in folder.iterdir() if (m := _POLICY_RE.match(p.name))]


def remove_temp_files(folder: str | Path) -> list[Path]:
    """Deletes the temp files of atomic writes that never finished (a writer killed mid-save).

    Call it only for a folder this process alone writes to (a learner's ``path_policy``, a
    collector's own data folder), before it writes there: another writer's temp file may be
    a write in progress.

    Returns:
        The files deleted.
    """
    folder = Path(folder)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for path in folder.iterdir():
        if _TEMP_RE.match(path.name) and path.is_file() and not path.is_symlink():
            try:
                path.unlink()
            except OSError:
                continue
            removed.append(path)
    return removed
