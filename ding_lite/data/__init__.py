"""Data movement between collectors and learners: files on the shared filesystem, loaders."""

from ding_lite.data.dataloader import AsyncDataLoader
from ding_lite.data.files import (
    policy_file,
    policy_versions,
    read_policy,
    read_rollout,
    reject_file,
    remove_newer_policies,
    remove_temp_files,
    write_policy,
    write_rollout,
)
from ding_lite.data.spec import (
    InvalidRolloutError,
    RolloutSpec,
    probe_rollout_spec,
    rollout_spec,
    validate_rollout,
)

__all__ = [
    "AsyncDataLoader",
    "InvalidRolloutError",
    "RolloutSpec",
    "policy_file",
    "policy_versions",
    "probe_rollout_spec",
    "read_policy",
    "read_rollout",
    "reject_file",
    "remove_newer_policies",
    "remove_temp_files",
    "rollout_spec",
    "validate_rollout",
    "write_policy",
    "write_rollout",
]
