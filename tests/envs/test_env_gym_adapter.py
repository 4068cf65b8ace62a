"""The gym:<id> adapter: spaces, tensors, same-step autoreset and error messages."""

import sys

import numpy as np
import pytest
import torch

from ding_lite.envs import Box, Discrete, create_env
from ding_lite.envs.gym_adapter import GymVectorEnv


def test_cartpole_shapes_dtypes_and_spaces():
    env = create_env("gym:CartPole-v1", 4, seed=0)
    assert env.name == "gym:CartPole-v1"
    assert env.action_space == Discrete(2) and env.obs_shape == (4,)
    assert env.max_episode_steps == 500
    obs, info = env.reset()
    assert obs.shape == (4, 4) and obs.dtype == torch.float32 and info == {}
    obs, reward, terminated, truncated, info = env.step(torch.tensor([0, 1, 0, 1]))
    assert obs.shape == (4, 4) and obs.dtype == torch.float32
    assert reward.dtype == torch.float32 and reward.shape == (4,)
    assert terminated.dtype == truncated.dtype == torch.bool
    assert info["final_obs"].shape == (4, 4)
    assert info["episode"]["length"].dtype == torch.int64
    env.close()


def test_pendulum_box_space():
    env = create_env("gym:Pendulum-v1", 2)
    assert env.action_space == Box(low=(-2.0,), high=(2.0,)) and env.obs_shape == (3,)
    env.reset(seed=0)
    _, reward, *_ = env.step(torch.tensor([[5.0], [-5.0]]))  # gymnasium clips these itself
    assert reward.shape == (2,) and (reward <= 0).all()


def test_autoreset_contract_matches_own_bookkeeping():
    env = create_env("gym:CartPole-v1", 6)
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(0)
    lengths = torch.zeros(6, dtype=torch.int64)
    finished = 0
    for _ in range(120):
        obs, reward, terminated, truncated, info = env.step(torch.as_tensor(rng.integers(0, 2, 6)))
        lengths += 1
        done = terminated | truncated
        episode = info["episode"]
        assert torch.equal(episode["mask"], done) and torch.equal(info["done"], done)
        assert torch.equal(info["final_obs"][~done], obs[~done])
        if done.any():
            assert torch.equal(episode["length"][done], lengths[done])
            assert torch.equal(episode["return"][done], lengths[done].float())
            final = info["final_obs"][done]
            assert ((final[:, 0].abs() > 2.4) | (final[:, 2].abs() > 0.2094)).all()
            assert (obs[done].abs() <= 0.05).all()
            finished += int(done.sum())
        lengths[done] = 0
    assert finished > 10


def test_truncation_through_max_episode_steps_kwarg():
    env = create_env("gym:Pendulum-v1", 3, max_episode_steps=4)
    assert env.max_episode_steps == 4
    env.reset(seed=0)
    flags = [env.step(torch.zeros(3, 1))[3].tolist() for _ in range(5)]
    assert flags[3] == [True] * 3 and not any(any(f) for i, f in enumerate(flags) if i != 3)


def test_same_seed_same_trajectory():
    def rollout():
        env = create_env("gym:CartPole-v1", 3, seed=5)
        out = [env.reset()[0]]
        for i in range(40):
            out.append(env.step(torch.tensor([i % 2, 1, 0]))[0])
        return out

    assert all(torch.equal(a, b) for a, b in zip(rollout(), rollout(), strict=True))


def test_unknown_id_suggests_close_matches():
    with pytest.raises(ValueError, match=r"unknown gymnasium env 'CartPol-v1'.*'CartPole-v1'"):
        create_env("gym:CartPol-v1", 2)
    with pytest.raises(ValueError, match="unknown gymnasium env 'Foo-v0'"):
        create_env("gym:Foo-v0", 2)


def test_unsupported_options():
    with pytest.raises(TypeError, match="gym:CartPole-v1 rejected option"):
        create_env("gym:CartPole-v1", 2, not_an_option=1)


def test_missing_gymnasium_explains_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # makes `import gymnasium` fail
    with pytest.raises(ImportError) as err:
        GymVectorEnv("CartPole-v1", num_envs=1)
    assert str(err.value) == (
        "gymnasium is required for gym:<id> envs: pip install gymnasium (in a ding_lite "
        "checkout: pip install -e '.[gym]')"
    )
