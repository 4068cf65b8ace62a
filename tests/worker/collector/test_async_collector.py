import time
from pathlib import Path

import pytest
import torch
from helpers import wait_for as wait_until

from ding_lite.config import get_config
from ding_lite.data import read_rollout, write_policy
from ding_lite.envs import create_env
from ding_lite.policy import PPOPolicy
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.collector.comm import AsyncCollector


def make(
    tmp_path, max_pending=4, env=None, experiment="cartpole_ppo", n_steps=16, report_first=False
):
    cfg = get_config(experiment)
    env = env if env is not None else create_env("cartpole", 4, seed=0)
    policy = PPOPolicy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    collector = SerialCollector(env, policy.collect_mode, n_steps=n_steps, gamma=0.99)
    return policy, AsyncCollector(
        collector,
        policy,
        name="c0",
        path_data=tmp_path,
        max_pending_files=max_pending,
        report_first=report_first,
    )


def wait_for(predicate):
    return wait_until(predicate, 45.0)  # under the tests' 60 s limit: a loaded host is slow


@pytest.mark.timeout(60)
def test_writes_files_and_pauses_at_backlog(tmp_path):
    _, collector = make(tmp_path, max_pending=3)
    collector.start()
    try:
        files = []  # a file is on disk a moment before its metadata is in the outbox
        assert wait_for(lambda: files.extend(collector.drain()["files"]) or len(files) >= 3)
        time.sleep(0.2)
        out = collector.drain()
        # paused: three files are written and none consumed (still on disk)
        assert [m["seq"] for m in files + out["files"]] == [0, 1, 2]
        assert len(list((tmp_path / "c0").glob("*.pt"))) == 3
        assert out["envstep"] == 3 * 64 and out["policy_version"] == 0
        content = read_rollout(files[0]["path"])
        assert content["data"]["obs"].shape == (64, 4)
        assert content["data"]["reward"].shape == (64,) and "adv" not in content["data"]
        for meta in files:  # the learner consumes them ...
            Path(meta["path"]).unlink()
        assert wait_for(lambda: len(collector.drain()["files"]) > 0)  # ... and it resumes
    finally:
        collector.stop()
    assert not collector.alive


@pytest.mark.timeout(60)
def test_policy_sync_swaps_weights_between_rollouts(tmp_path):
    policy, collector = make(tmp_path)
    new_state = {k: torch.zeros_like(v) for k, v in policy.model.state_dict().items()}
    path = write_policy(tmp_path / "policy", 5, new_state)
    collector.start()
    written = []

    def consume():  # as the learner does; a paused loop swaps once it may collect again
        for meta in collector.drain()["files"]:
            written.append(meta["policy_version"])
            Path(meta["path"]).unlink()

    try:
        assert wait_for(lambda: len(list((tmp_path / "c0").glob("*.pt"))) >= 4)
        time.sleep(0.1)
        collector.sync_policy(str(path), 5, published_at=time.time())
        time.sleep(0.1)
        assert collector.policy_version == 0  # paused at its backlog: nothing acts yet
        assert wait_for(lambda: consume() or collector.policy_version == 5)
        assert all(torch.count_nonzero(p) == 0 for p in policy.model.parameters())
        assert wait_for(lambda: consume() or 5 in written)
        assert written[:4] == [0, 0, 0, 0]
        collector.sync_policy(str(path), 5)  # same version again: ignored
        with pytest.raises(ValueError, match="holds policy version 5"):
            collector.sync_policy(str(path), 6)
    finally:
        collector.stop()


@pytest.mark.timeout(60)
def test_failure_in_the_loop_is_reported_by_drain(tmp_path):
    _, collector = make(tmp_path)
    collector.collector.collect = lambda: (_ for _ in ()).throw(RuntimeError("env exploded"))
    collector.start()
    assert wait_for(lambda: not collector.alive)
    with pytest.raises(RuntimeError, match="env exploded"):
        collector.drain()


@pytest.mark.timeout(60)
def test_drain_reports_episode_outcomes_of_envs_that_have_them(tmp_path):
    env = create_env("aircombat", 64, seed=0, opponent="rule_based", throttle=1.0)
    _, async_collector = make(
        tmp_path, max_pending=8, env=env, experiment="aircombat_ppo", n_steps=64
    )
    async_collector.start()
    try:
        # An untrained pilot loses most fights within a few hundred steps.
        assert wait_for(lambda: len(list((tmp_path / "c0").glob("*.pt"))) >= 8)
        out = async_collector.drain()
    finally:
        async_collector.stop()
    outcomes, returns = out["episode_outcomes"], out["episode_returns"]
    assert len(outcomes) == len(returns) > 0
    assert set(outcomes) <= {-1.0, 0.0, 1.0}

    _, plain = make(tmp_path / "cartpole")
    plain.start()
    try:
        assert wait_for(lambda: len(list((tmp_path / "cartpole" / "c0").glob("*.pt"))) >= 2)
        assert plain.drain()["episode_outcomes"] == []
    finally:
        plain.stop()


@pytest.mark.timeout(60)
def test_on_policy_runs_once_the_first_rollout_with_that_policy_is_written(tmp_path):
    policy, collector = make(tmp_path, max_pending=1)
    seen = []

    def on_policy(version):  # e.g. an evaluation: by now the learner has the new data
        files = sorted((tmp_path / "c0").glob("*.pt"))
        seen.append((version, [read_rollout(f)["policy_version"] for f in files]))
        return {"policy_version": version}

    collector.set_on_policy(on_policy)
    state = {k: v.clone() for k, v in policy.model.state_dict().items()}
    path = write_policy(tmp_path / "policy", 5, state)
    collector.start()
    try:
        taken = []  # the file is on disk a moment before its metadata is in the outbox
        assert wait_for(lambda: taken.extend(collector.drain()["files"]) or taken)
        collector.sync_policy(str(path), 5, published_at=time.time())
        for meta in taken:  # the learner takes the v0 rollout
            Path(meta["path"]).unlink()
        assert wait_for(lambda: bool(seen))
        assert seen == [(5, [5])]
        assert wait_for(lambda: collector.drain()["evals"] == [{"policy_version": 5}])
    finally:
        collector.stop()


@pytest.mark.timeout(60)
def test_a_policy_applied_after_stop_is_reported_but_not_timed(tmp_path):
    policy, collector = make(tmp_path)
    collector.set_on_policy(lambda version: {"policy_version": version})
    path = write_policy(tmp_path / "policy", 3, policy.model.state_dict())
    collector.start()
    assert wait_for(lambda: len(collector.drain()["files"]) > 0)
    collector.stop()
    collector.sync_policy(str(path), 3, published_at=time.time() - 5.0)
    collector.apply_pending_policy()  # e.g. for a final evaluation: no rollout acts with it
    out = collector.drain()
    assert out["policy_version"] == 3 and out["evals"] == [{"policy_version": 3}]
    assert out["sync_latency_s"] == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("report_first", [False, True])
def test_report_first_runs_on_policy_for_the_starting_policy_once(tmp_path, report_first):
    """evaluator.before_train's hook: with report_first the policy the collector starts
    with (version 0, never swapped in) gets on_policy once its first rollout is written;
    without it, only swapped-in versions do."""
    _, collector = make(tmp_path, max_pending=16, report_first=report_first)
    seen = []
    collector.set_on_policy(lambda version: seen.append(version) or {"policy_version": version})
    collector.start()
    try:
        assert wait_for(lambda: len(list((tmp_path / "c0").glob("*.pt"))) >= 3)
    finally:
        collector.stop()
    assert seen == ([0] if report_first else [])
    assert collector.drain()["evals"] == [{"policy_version": 0} for _ in seen]
