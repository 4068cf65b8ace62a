"""``env.reward_fn``: a registered function the collectors train on in place of the env's
reward (verl's reward_fn), with the step's observations, actions and info."""

from __future__ import annotations

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.reward_fns import REWARD_FN_REGISTRY, build_reward_fn
from ding_lite.policy import create_policy
from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.registry import RegistryError
from ding_lite.worker.collector import SerialCollector


def _rollout(overrides=()):
    """One 16-step rollout of 4 CartPole copies, seed 0, with ``overrides``."""
    cfg = compile_config(
        "cartpole_ppo", ["env.num_envs=4", "policy.collect.n_steps=16", *overrides]
    )
    env = create_env("cartpole", 4, seed=0)
    torch.manual_seed(0)
    policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    collector = SerialCollector.from_config(env, policy, cfg, seed=0)
    return collector.collect(), collector


def test_the_collector_trains_on_the_functions_reward_and_reports_the_envs_returns():
    plain, plain_collector = _rollout()
    scaled, scaled_collector = _rollout(["env.reward_fn=scale", "env.reward_fn_kwargs.factor=2.5"])
    assert torch.equal(plain["reward"], torch.ones_like(plain["reward"]))  # CartPole's
    assert torch.equal(scaled["reward"], plain["reward"] * 2.5)
    assert torch.equal(scaled["obs"], plain["obs"]) and torch.equal(
        scaled["action"], plain["action"]
    )
    assert scaled_collector.last_returns == plain_collector.last_returns  # the env's own
    clipped, _ = _rollout(["env.reward_fn=clip", "env.reward_fn_kwargs.high=0.25"])
    assert torch.equal(clipped["reward"], torch.full_like(plain["reward"], 0.25))


def test_a_users_function_sees_the_steps_rows(monkeypatch):
    monkeypatch.setattr("ding_lite.envs.reward_fns.REWARD_FN_REGISTRY", REWARD_FN_REGISTRY.copy())
    seen = []

    def upright_bonus(obs, action, reward, next_obs, info, weight):
        seen.append((obs.shape, action.shape, next_obs.shape, "final_obs" in info))
        return reward + weight * (next_obs[:, 2].abs() < 0.05)  # pole nearly upright

    from ding_lite.envs import register_reward_fn

    register_reward_fn("upright_bonus", upright_bonus)
    data, _ = _rollout(["env.reward_fn=upright_bonus", "env.reward_fn_kwargs.weight=0.5"])
    assert seen[0] == ((4, 4), (4,), (4, 4), True) and len(seen) == 16
    assert set(data["reward"].unique().tolist()) <= {1.0, 1.5}


def test_bad_names_kwargs_and_outputs_are_one_line_errors(tmp_path):
    assert build_reward_fn("", {}) is None
    with pytest.raises(ConfigError, match="env.reward_fn_kwargs is set but env.reward_fn names"):
        build_reward_fn("", {"factor": 2})
    with pytest.raises(RegistryError, match="unknown reward function 'scal'.*did you mean"):
        build_reward_fn("scal", {})
    broken = build_reward_fn("scale", {"factor": torch.ones(3, 1)})  # broadcasts to [3, 3]
    with pytest.raises(DingLiteError, match="returned \\(3, 3\\) for rewards of shape \\(3,\\)"):
        broken(obs=None, action=None, reward=torch.ones(3), next_obs=None, info={})
    with pytest.raises(ConfigError, match="unknown reward function 'nope'"):
        serial_pipeline(
            "cartpole_ppo", overrides=["env.reward_fn=nope"], exp_dir=str(tmp_path / "r")
        )
    assert not (tmp_path / "r").exists()  # refused before anything was written
