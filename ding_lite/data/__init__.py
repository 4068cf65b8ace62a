"""Data movement between collectors and learners: files on the shared filesystem, loaders."""

from ding_lite.data.dataloader import AsyncDataLoader
from ding_lite.data.files import (
    policy_file,
    policy_versions,
    read_policy,
    read_rollout,
    write_policy,
    write_rollout,
)

__all__ = [
    "AsyncDataLoader",
    "policy_file",
    "policy_versions",
    "read_policy",
    "read_rollout",
    "write_policy",
    "write_rollout",
]
