"""Pendulum against gymnasium's Pendulum-v1, plus truncation and seeding."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from ding_lite.envs import Box, PendulumEnv, create_env

M = 16


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_step_matches_gymnasium_with_clipping(dtype):
    gym_envs = [gym.make("Pendulum-v1").unwrapped for _ in range(M)]
    for i, e in enumerate(gym_envs):
        e.reset(seed=i)
    env = PendulumEnv(num_envs=M, dtype=dtype, max_episode_steps=None)  # state re-set each step
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    eps = 1e-6 if dtype == torch.float64 else 1e-5
    tol = {"rtol": eps, "atol": eps}
    for _ in range(300):
        # Angles well beyond [-pi, pi) exercise angle_normalize; speeds up to the clip.
        states = rng.uniform(-1.0, 1.0, (M, 2)) * np.array([3 * math.pi, 9.0])
        for e, s in zip(gym_envs, states, strict=True):
            e.state = s.copy()
        env.state = torch.as_tensor(states)
        torques = rng.uniform(-3.0, 3.0, (M, 1)).astype(np.float32)  # a third out of bounds
        _, reward, terminated, truncated, info = env.step(torch.as_tensor(torques))
        results = [e.step(u) for e, u in zip(gym_envs, torques, strict=True)]
        assert_close(info["final_obs"], torch.as_tensor(np.stack([r[0] for r in results])), **tol)
        ref_reward = torch.tensor([float(r[1]) for r in results], dtype=torch.float32)
        assert_close(reward, ref_reward, **tol)
        assert not terminated.any() and not truncated.any()
        new_state = torch.as_tensor(np.stack([e.state for e in gym_envs]))
        assert_close(env.state.double(), new_state, **tol)


def test_spaces_and_reset_distribution():
    env = create_env("pendulum", 4096)
    assert env.action_space == Box(low=(-2.0,), high=(2.0,))
    assert env.obs_shape == (3,) and env.max_episode_steps == 200
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4096, 3) and obs.dtype == torch.float32
    theta, theta_dot = env.state.unbind(1)
    assert theta.abs().max() <= math.pi and theta_dot.abs().max() <= 1.0
    assert theta.min() < -3.0 and theta.max() > 3.0  # covers U(-pi, pi)
    assert_close(obs, torch.stack((theta.cos(), theta.sin(), theta_dot), dim=1))


def test_truncates_at_200_and_never_terminates():
    env = create_env("pendulum", 4)
    env.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    total = torch.zeros(4)
    for t in range(1, 201):
        action = torch.rand(4, 1, generator=gen) * 4 - 2
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        assert not terminated.any()
        assert bool(truncated.all()) == (t == 200) and bool(truncated.any()) == (t == 200)
        if t < 200:
            assert torch.equal(obs, info["final_obs"])
    episode = info["episode"]
    assert episode["mask"].all() and episode["length"].tolist() == [200] * 4
    assert_close(episode["return"], total)
    assert not torch.equal(obs, info["final_obs"])  # the next episode has begun
    _, _, _, truncated, info = env.step(torch.zeros(4, 1))
    assert not truncated.any() and not info["episode"]["mask"].any()


def test_max_episode_steps_kwarg_and_g():
    env = create_env("pendulum", 2, max_episode_steps=3, g=9.81)
    assert env.g == 9.81
    env.reset(seed=0)
    truncs = [env.step(torch.zeros(2, 1))[3].all().item() for _ in range(6)]
    assert truncs == [False, False, True, False, False, True]


def test_same_seed_same_trajectory():
    def rollout(seed):
        env = create_env("pendulum", 8)
        out = [env.reset(seed=seed)[0]]
        gen = torch.Generator().manual_seed(3)
        for _ in range(250):
            obs, reward, *_ = env.step(torch.rand(8, 1, generator=gen) * 6 - 3)
            out += [obs, reward]
        return out

    a, b, c = rollout(4), rollout(4), rollout(5)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    assert not torch.equal(a[-2], c[-2])


def test_action_shape_is_checked():
    env = create_env("pendulum", 3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \[3, 1\]"):
        env.step(torch.zeros(3))
