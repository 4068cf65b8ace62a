"""Rollout and policy files on the shared filesystem.

Collectors write one file per rollout under ``<path_data>/<collector>/``; learners publish one
file per policy version under ``<path_policy>/``. Every file is written atomically (temp file
in the same folder, fsync, ``os.replace``), holds only tensors, numbers and strings, and is read
with ``torch.load(weights_only=True)``, so no reader ever sees a torn file or runs a pickle.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import torch

from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_torch_save, safe_torch_load

ROLLOUT_FORMAT = "ding_lite.rollout.v1"
POLICY_FORMAT = "ding_lite.policy.v1"
_POLICY_RE = re.compile(r"^policy_v(\d+)\.pt$")


def write_rollout(
    path_data: str | Path,
    collector: str,
    seq: int,
    data: dict[str, torch.Tensor],
    *,
    policy_version: int,
    episode_returns: list[float] | None = None,
) -> dict[str, Any]:
    """Writes one rollout as ``<path_data>/<collector>/<seq>.pt``; returns its metadata.

    Args:
        path_data: the shared data folder.
        collector: the writing collector's id (its own sub-folder).
        seq: the rollout's sequence number within the collector.
        data: flat ``[B, ...]`` tensors (moved to the CPU before writing).
        policy_version: the version of the policy that collected the rollout.
        episode_returns: returns of the episodes that finished during the rollout.

    Returns:
        ``{"path", "collector", "seq", "policy_version", "size", "created"}`` (JSON-ready).
    """
    path = Path(path_data) / collector / f"{seq:08d}.pt"
    cpu = {key: value.detach().cpu() for key, value in data.items()}
    size = int(next(iter(cpu.values())).shape[0]) if cpu else 0
    atomic_torch_save(
        {
            "format": ROLLOUT_FORMAT,
            "collector": collector,
            "seq": seq,
            "policy_version": policy_version,
            "episode_returns": list(episode_returns or []),
            "data": cpu,
        },
        path,
    )
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
    path_policy: str | Path, version: int, model_state: dict[str, torch.Tensor], keep: int = 3
) -> Path:
    """Publishes a policy version atomically and deletes all but the newest ``keep``."""
    path = policy_file(path_policy, version)
    state = {key: value.detach().cpu() for key, value in model_state.items()}
    atomic_torch_save({"format": POLICY_FORMAT, "version": version, "model": state}, path)
    versions = sorted(policy_versions(path_policy))
    for old in versions[:-keep]:
        policy_file(path_policy, old).unlink(missing_ok=True)
    return path


def read_policy(path: str | Path) -> tuple[int, dict[str, torch.Tensor]]:
    """Reads a published policy: ``(version, model state dict)``.

    Raises:
        CheckpointError: missing, unreadable or not a policy file.
    """
    content = safe_torch_load(path)
    if not isinstance(content, dict) or content.get("format") != POLICY_FORMAT:
        raise CheckpointError(f"{path} is not a ding_lite policy file")
    return int(content["version"]), content["model"]


def policy_versions(path_policy: str | Path) -> list[int]:
    """The policy versions present in ``path_policy``."""
    folder = Path(path_policy)
    if not folder.is_dir():
        return []
    return [int(m.group(1)) for p in folder.iterdir() if (m := _POLICY_RE.match(p.name))]
