"""The collection loop's synchronous mode (``system.sync_collect``) and its first policy."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from helpers import wait_for

from ding_lite.config import get_config
from ding_lite.data import read_rollout, write_policy
from ding_lite.envs import create_env
from ding_lite.policy import PPOPolicy
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.collector.comm import AsyncCollector

pytestmark = pytest.mark.timeout(60)


def make(tmp_path: Path, sync: bool) -> tuple[PPOPolicy, AsyncCollector]:
    cfg = get_config("cartpole_ppo")
    env = create_env("cartpole", 2, seed=0)
    policy = PPOPolicy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    collector = SerialCollector(env, policy.collect_mode, n_steps=8, gamma=0.99)
    loop = AsyncCollector(
        collector, policy, name="c0", path_data=tmp_path / "data", max_pending_files=4, sync=sync
    )
    return policy, loop


def publish(tmp_path: Path, policy: PPOPolicy, version: int) -> str:
    return str(write_policy(tmp_path / "policy", version, policy.model.state_dict(), keep=8))


def files(tmp_path: Path) -> list[dict]:
    return sorted(
        (read_rollout(p) | {"name": p.name} for p in (tmp_path / "data" / "c0").glob("*.pt")),
        key=lambda c: c["name"],
    )


def test_a_sync_collector_waits_for_each_newer_version(tmp_path):
    policy, loop = make(tmp_path, sync=True)
    loop.sync_policy(publish(tmp_path, policy, 0), 0)
    loop.start()
    try:
        assert wait_for(lambda: len(files(tmp_path)) == 1)
        time.sleep(0.3)  # room for more: none comes before version 1
        assert [f["policy_version"] for f in files(tmp_path)] == [0]
        loop.sync_policy(publish(tmp_path, policy, 1), 1)
        assert wait_for(lambda: len(files(tmp_path)) == 2)
        time.sleep(0.3)
        assert [f["policy_version"] for f in files(tmp_path)] == [0, 1]
        # A learner that went back to a checkpoint: the older version lifts the wait.
        loop.sync_policy(publish(tmp_path, policy, 0), 0, rollback=True)
        assert wait_for(lambda: len(files(tmp_path)) == 3)
        assert [f["policy_version"] for f in files(tmp_path)] == [0, 1, 0]
    finally:
        loop.stop()


def test_an_async_collector_does_not_wait(tmp_path):
    policy, loop = make(tmp_path, sync=False)
    loop.sync_policy(publish(tmp_path, policy, 0), 0)
    loop.start()
    try:
        assert wait_for(lambda: len(files(tmp_path)) == 4)  # up to max_pending_files
    finally:
        loop.stop()


def test_the_first_published_policy_replaces_the_built_weights(tmp_path):
    """Version 0 is the learner's starting policy: the collector acts with it, not with the
    weights it was built with (before, a version not newer than 0 was ignored)."""
    policy, loop = make(tmp_path, sync=False)
    published = {k: v.clone() for k, v in policy.model.state_dict().items()}
    for tensor in published.values():
        if tensor.is_floating_point():
            tensor.add_(0.5)
    path = write_policy(tmp_path / "policy", 0, published, keep=8)
    loop.sync_policy(str(path), 0)
    loop.start()
    try:
        assert wait_for(lambda: len(files(tmp_path)) >= 1)
    finally:
        loop.stop()
    for name, tensor in policy.model.state_dict().items():
        assert torch.equal(tensor, published[name]), name
