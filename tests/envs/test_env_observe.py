"""``observe="position"``: the bundled cartpole and pendulum with their velocities hidden.

The dynamics, rewards, dones and autoreset are those of ``observe="full"``; only the
observation (and the final observation of finished episodes) loses the velocity columns.
"""

from __future__ import annotations

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.from_config import build_env
from ding_lite.utils.errors import ConfigError

# env -> (columns of the full observation that "position" keeps, full obs width)
KEPT = {"cartpole": ([0, 2], 4), "pendulum": ([0, 1], 3)}


def _actions(name: str, n: int, g: torch.Generator) -> torch.Tensor:
    if name == "cartpole":
        return torch.randint(0, 2, (n,), generator=g)
    return torch.rand(n, 1, generator=g) * 4 - 2


@pytest.mark.parametrize("name", sorted(KEPT))
def test_position_hides_the_velocities_and_changes_nothing_else(name):
    kept, width = KEPT[name]
    n = 8
    full = create_env(name, n, seed=3)
    pos = create_env(name, n, seed=3, observe="position", max_episode_steps=40)
    full.max_episode_steps = 40
    assert full.obs_shape == (width,) and pos.obs_shape == (len(kept),)
    obs_f, _ = full.reset()
    obs_p, _ = pos.reset()
    assert torch.equal(obs_p, obs_f[:, kept])
    g = torch.Generator().manual_seed(0)
    finished = 0
    for _ in range(60):  # past the time limit, and cartpole terminates on the way
        action = _actions(name, n, g)
        obs_f, rew_f, term_f, trunc_f, info_f = full.step(action)
        obs_p, rew_p, term_p, trunc_p, info_p = pos.step(action)
        assert obs_p.dtype == torch.float32 and obs_p.is_contiguous()
        assert torch.equal(obs_p, obs_f[:, kept])
        assert torch.equal(info_p["final_obs"], info_f["final_obs"][:, kept])
        assert torch.equal(rew_p, rew_f) and torch.equal(term_p, term_f)
        assert torch.equal(trunc_p, trunc_f)
        assert torch.equal(info_p["episode"]["return"], info_f["episode"]["return"])
        finished += int(info_p["done"].sum())
    assert finished >= n  # every copy finished an episode at least once


@pytest.mark.parametrize("name", sorted(KEPT))
def test_position_observations_are_fresh_memory(name):
    env = create_env(name, 4, seed=0, observe="position")
    obs, _ = env.reset()
    before = env.state.clone()
    obs += 100.0
    assert torch.equal(env.state, before)


def test_an_unknown_mode_is_a_one_line_config_error():
    cfg = compile_config("cartpole_ppo", ["env.kwargs.observe=velocity"])
    with pytest.raises(ConfigError, match=r"cartpole: observe must be one of full, position"):
        build_env(cfg, 2, "cpu", 0)


def test_an_experiment_with_position_builds_a_policy_of_that_width(tmp_path):
    from ding_lite import serial_pipeline

    run = serial_pipeline(
        "pendulum_ppo",
        overrides=["env.kwargs.observe=position", "env.num_envs=4", "policy.collect.n_steps=16"],
        exp_dir=str(tmp_path / "run"),
        max_train_iter=1,
        verbose=0,
    )
    assert run.obs_shape == (2,)
    assert run.predict(torch.zeros(2).numpy()).shape == (1,)
