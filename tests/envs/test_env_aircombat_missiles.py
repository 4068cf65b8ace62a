"""Air combat's ``observe="missiles"``: four features on the missiles in flight after the
usual ten, the same dynamics, for P1, the opponent and both self-play agents; and
``observe="stock"``: those and the enemy's missiles left."""

from __future__ import annotations

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.envs.aircombat.env import AirCombatEnv
from ding_lite.envs.aircombat.physics import MISSILES


def _actions(n: int, g: torch.Generator) -> torch.Tensor:
    rudder = torch.rand(n, 1, generator=g) * 2 - 1
    throttle = torch.rand(n, 1, generator=g)
    fire = (torch.rand(n, 1, generator=g) < 0.3).float()
    return torch.cat((rudder, throttle, fire), 1)


def test_the_missile_features_follow_the_missiles_and_change_nothing_else():
    n, g = 16, torch.Generator().manual_seed(0)
    base = AirCombatEnv(num_envs=n, seed=1)
    seen = AirCombatEnv(num_envs=n, seed=1, observe="missiles")
    obs_b, _ = base.reset(seed=1)
    obs_m, _ = seen.reset(seed=1)
    assert obs_b.shape == (n, 10) and obs_m.shape == (n, 14)
    flew = inbound = 0
    for _ in range(400):
        action = _actions(n, g)
        obs_b, rew_b, *_ = base.step(action)
        obs_m, rew_m, *_ = seen.step(action)
        assert torch.equal(obs_m[:, :10], obs_b) and torch.equal(rew_m, rew_b)
        extra = obs_m[:, 10:]
        assert torch.equal(extra[:, 0], seen.inbound_missile()[:, 0].float())
        own = seen.m_active[:, 0].sum(-1) / MISSILES
        enemy = seen.m_active[:, 1].sum(-1) > 0
        # A copy that just reset shows its new episode: no missile in flight yet.
        assert torch.allclose(extra[:, 3], own)
        assert torch.equal(extra[:, 1] > 0, enemy)
        assert extra[:, 2].abs().max() <= 1.0
        flew += int(own.gt(0).sum())
        inbound += int(extra[:, 0].sum())
    assert flew > 0 and inbound > 0  # both sides had missiles in flight at times


def test_self_play_agents_each_see_the_other_sides_missiles():
    env = AirCombatEnv(num_envs=4, seed=0, opponent="self", observe="missiles")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 2, 14)
    g = torch.Generator().manual_seed(1)
    for _ in range(200):
        obs, *_ = env.step(torch.stack((_actions(4, g), _actions(4, g)), 1))
        assert torch.equal(obs[:, :, 10], env.inbound_missile().float())


def test_the_stock_feature_is_the_enemys_missiles_left_after_the_missile_features():
    n, g = 8, torch.Generator().manual_seed(2)
    seen = AirCombatEnv(num_envs=n, seed=3, opponent="self", observe="missiles")
    stock = AirCombatEnv(num_envs=n, seed=3, opponent="self", observe="stock")
    obs_m, _ = seen.reset(seed=3)
    obs_s, _ = stock.reset(seed=3)
    assert obs_s.shape == (n, 2, 15)
    spent = False
    for _ in range(300):
        action = torch.stack((_actions(n, g), _actions(n, g)), 1)
        obs_m, *_ = seen.step(action)
        obs_s, *_ = stock.step(action)
        assert torch.equal(obs_s[..., :14], obs_m)
        # Each agent sees the other's missiles left: its own, seen from the other side.
        assert torch.equal(obs_s[:, 0, 14], obs_s[:, 1, 4]) and torch.equal(
            obs_s[:, 1, 14], obs_s[:, 0, 4]
        )
        assert torch.allclose(obs_s[:, :, 14], stock.stock.flip(1) / MISSILES)
        spent |= bool((obs_s[..., 14] < 1).any())
    assert spent  # some enemy fired: the feature moved


def test_an_unknown_option_is_one_line():
    match = "observe must be one of base, missiles, stock; got 'radar'"
    with pytest.raises(ValueError, match=match):
        AirCombatEnv(num_envs=2, observe="radar")


def test_aircombat_ppo_trains_on_the_missile_observation(tmp_path):
    run = serial_pipeline(
        "aircombat_ppo",
        overrides=["env.kwargs.observe=missiles", "env.num_envs=16", "policy.collect.n_steps=32"],
        max_train_iter=1,
        exp_dir=str(tmp_path / "run"),
        verbose=0,
    )
    assert run.obs_shape == (14,)
