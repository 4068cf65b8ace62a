"""Observation normalization and reward scaling in rollouts, and the statistics' data flow."""

import pytest
import torch
from helpers import wait_for

from ding_lite.config import get_config
from ding_lite.data import write_policy
from ding_lite.data.spec import InvalidRolloutError, probe_rollout_spec, validate_rollout
from ding_lite.envs import create_env
from ding_lite.model.normalizer import NORM_EPS, summarize
from ding_lite.policy import PPOPolicy
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.collector.comm import AsyncCollector

GAMMA = 0.9


def make(env_name="pendulum", num_envs=3, n_steps=50, seed=0, norm=True):
    cfg = get_config("pendulum_ppo")
    cfg.policy.model.obs_norm = norm
    cfg.policy.learn.reward_scale = norm
    cfg.policy.collect.update(n_steps=n_steps, gamma=GAMMA, gae_lambda=0.95)
    env = create_env(env_name, num_envs, seed=seed, max_episode_steps=40)
    policy = PPOPolicy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    collector = SerialCollector(env, policy.collect_mode, n_steps=n_steps, gamma=GAMMA, seed=seed)
    return env, policy, collector


class Recorder:
    """Wraps an env's step to record what it returned (raw observations and rewards)."""

    def __init__(self, env):
        self.env, self.step_fn = env, env.step
        self.obs, self.rewards, self.dones = [], [], []
        env.step = self.step

    def step(self, action):
        out = self.step_fn(action)
        obs, reward, terminated, truncated, _ = out
        self.obs.append(obs.clone())
        self.rewards.append(reward.clone())
        self.dones.append(terminated | truncated)
        return out


def test_rewards_are_scaled_by_the_running_return_std_like_a_plain_loop():
    env, policy, collector = make()
    # Statistics a previous version learned: the rollout scales by them, frozen.
    policy.model.ret_rms.merge(summarize(torch.tensor([0.0, 30.0, 60.0]), ()))
    policy.model.obs_rms.merge(summarize(torch.randn(50, 3) * 4 + 1, (3,)))
    first_obs = collector.carry.obs.clone()
    rec = Recorder(env)
    data = collector.collect()
    std = (policy.model.ret_rms.var + NORM_EPS).sqrt().float()

    running, seen = torch.zeros(3), []
    for reward, done in zip(rec.rewards, rec.dones, strict=True):  # as SB3's VecNormalize
        running = running * GAMMA + reward
        seen.append(running.clone())
        running = torch.where(done, torch.zeros_like(running), running)
    assert torch.allclose(collector._b_rewards, torch.stack(rec.rewards) / std)
    assert torch.equal(data["reward"], collector._b_rewards.flatten())  # shipped scaled
    assert torch.allclose(data["ret_norm_update"][0], summarize(torch.stack(seen), ()))
    assert torch.allclose(collector.carry.running_return, running)
    # Observations: stored normalized with the frozen statistics, summarized raw.
    raw = torch.stack([first_obs, *rec.obs[:-1]])
    assert torch.allclose(data["obs"], policy.model.obs_rms.normalize(raw).flatten(0, 1))
    assert torch.allclose(data["obs_norm_update"][0], summarize(raw, (3,)))
    assert data["obs_norm_update"].dtype == torch.float64


def test_the_update_merges_the_rollout_statistics_after_training_on_it():
    _, policy, collector = make()
    data = collector.collect()
    assert policy.model.obs_rms.count == 0
    policy.learn_mode.forward(data)
    assert policy.model.obs_rms.count == 150 == policy.model.ret_rms.count
    raw_mean = data["obs_norm_update"][0, 1:4]
    assert torch.allclose(policy.model.obs_rms.mean, raw_mean)


def test_without_normalization_nothing_changes():
    _, policy, collector = make(norm=False)
    data = collector.collect()
    steps = {"reward", "next_value", "terminated", "done"}
    assert set(data) == {"obs", "action", "logp", "value", *steps}
    assert set(policy.learn_mode.prepare(data)) == {"obs", "action", "logp", "value", "adv", "ret"}
    assert policy.collect_mode.obs_rms is None and policy.collect_mode.ret_rms is None


def test_rollout_spec_checks_the_summaries():
    env, policy, collector = make()
    spec = probe_rollout_spec(create_env("pendulum", 1, seed=0), policy.collect_mode)
    assert spec.stats == {"obs_norm_update": 7, "ret_norm_update": 3}
    data = collector.collect()
    validate_rollout({"data": data}, spec, 150)
    bad = dict(data, obs_norm_update=data["obs_norm_update"].clone())
    bad["obs_norm_update"][0, 5] = -1.0  # a negative sum of squares
    with pytest.raises(InvalidRolloutError, match="negative"):
        validate_rollout({"data": bad}, spec, 150)
    with pytest.raises(InvalidRolloutError, match="missing key 'ret_norm_update'"):
        validate_rollout(
            {"data": {k: v for k, v in data.items() if k != "ret_norm_update"}}, spec, 150
        )
    wrong = dict(data, ret_norm_update=data["ret_norm_update"].float())
    with pytest.raises(InvalidRolloutError, match="expected float64"):
        validate_rollout({"data": wrong}, spec, 150)


@pytest.mark.timeout(60)
def test_two_collectors_hold_identical_statistics_after_a_sync(tmp_path):
    """The learner's merged statistics go out in the policy file: every collector that
    syncs to that version normalizes with exactly them."""
    _, learner_policy, learner_collector = make(seed=1)
    learner_policy.learn_mode.forward(learner_collector.collect())
    path = write_policy(tmp_path / "policy", 1, learner_policy.model.state_dict())
    loops = []
    for i in range(2):
        _, policy, collector = make(seed=10 + i, n_steps=8)
        loops.append((policy, AsyncCollector(collector, policy, name=f"c{i}", path_data=tmp_path)))
    try:
        for _, loop in loops:
            loop.start()
            loop.sync_policy(str(path), 1)
        assert all(wait_for(lambda loop=loop: loop.policy_version == 1) for _, loop in loops)
        for policy, _ in loops:
            for name in ("obs_rms", "ret_rms"):
                mine = getattr(policy.model, name).state_dict()
                theirs = getattr(learner_policy.model, name).state_dict()
                assert all(torch.equal(mine[k], theirs[k]) for k in theirs), name
    finally:
        for _, loop in loops:
            loop.stop()
