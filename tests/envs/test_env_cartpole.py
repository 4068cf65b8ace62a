"""CartPole against gymnasium's CartPole-v1, plus the autoreset and seeding contract."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from ding_lite.envs import CartPoleEnv, Discrete, create_env

M = 16  # copies compared with gymnasium


def _gym_copies(max_episode_steps: int) -> list[gym.Env]:
    envs = [gym.make("CartPole-v1", max_episode_steps=max_episode_steps) for _ in range(M)]
    for i, env in enumerate(envs):
        env.reset(seed=100 + i)
    return envs


def _gym_states(envs: list[gym.Env]) -> torch.Tensor:
    return torch.as_tensor(np.stack([env.unwrapped.state for env in envs]))


def test_float64_trajectories_match_gymnasium():
    max_steps = 60  # short enough that some copies get truncated
    gym_envs = _gym_copies(max_steps)
    env = CartPoleEnv(num_envs=M, dtype=torch.float64, max_episode_steps=max_steps)
    env.reset(seed=0)
    env.state = _gym_states(gym_envs)
    rng = np.random.default_rng(0)
    ended = {"terminated": 0, "truncated": 0}
    for _ in range(400):
        actions = rng.integers(0, 2, M)
        obs, reward, terminated, truncated, info = env.step(torch.as_tensor(actions))
        results = [e.step(int(a)) for e, a in zip(gym_envs, actions, strict=True)]
        assert_close(info["final_obs"], torch.as_tensor(np.stack([r[0] for r in results])))
        assert_close(reward, torch.tensor([r[1] for r in results], dtype=torch.float32))
        assert terminated.tolist() == [r[2] for r in results]
        assert truncated.tolist() == [r[3] for r in results]
        done = (terminated | truncated).tolist()
        # Rows that go on must agree in float64 (the states are only re-synced at resets).
        live = ~(terminated | truncated)
        assert_close(env.state[live], _gym_states(gym_envs)[live], rtol=0, atol=1e-9)
        for i, env_done in enumerate(done):
            if env_done:
                gym_envs[i].reset()
                env.state[i] = torch.as_tensor(gym_envs[i].unwrapped.state)
        ended["terminated"] += int(terminated.sum())
        ended["truncated"] += int(truncated.sum())
    assert ended["terminated"] > 50 and ended["truncated"] > 0


def test_float32_step_matches_gymnasium_within_tolerance():
    gym_envs = _gym_copies(500)
    env = CartPoleEnv(num_envs=M)
    env.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(200):
        # Re-sync every step: float32 rounding grows quickly on an unstable system.
        for e in gym_envs:
            e.unwrapped.state = rng.uniform(-0.15, 0.15, 4) * np.array([15, 10, 1.5, 10])
            e.unwrapped.steps_beyond_terminated = None
        env.state = _gym_states(gym_envs)
        actions = rng.integers(0, 2, M)
        _, reward, terminated, _, info = env.step(torch.as_tensor(actions))
        results = [e.unwrapped.step(int(a)) for e, a in zip(gym_envs, actions, strict=True)]
        ref_obs = torch.as_tensor(np.stack([r[0] for r in results]))
        assert_close(info["final_obs"], ref_obs, rtol=1e-5, atol=1e-5)
        assert (reward == 1.0).all()
        # Away from the thresholds float32 and float64 must agree on termination.
        margin = torch.minimum(
            (ref_obs[:, 0].abs() - 2.4).abs(), (ref_obs[:, 2].abs() - 0.2094).abs()
        )
        clear = margin > 1e-4
        ref_terminated = torch.tensor([r[2] for r in results])
        assert torch.equal(terminated[clear], ref_terminated[clear])


def test_spaces_and_shapes():
    env = create_env("cartpole", 8)
    assert env.action_space == Discrete(2)
    assert env.obs_shape == (4,)
    assert env.max_episode_steps == 500
    obs, info = env.reset(seed=3)
    assert obs.shape == (8, 4) and obs.dtype == torch.float32 and info == {}
    assert obs.abs().max() <= 0.05
    obs, reward, terminated, truncated, info = env.step(torch.zeros(8, dtype=torch.int64))
    assert obs.shape == (8, 4) and obs.dtype == torch.float32
    assert reward.shape == (8,) and reward.dtype == torch.float32
    assert terminated.dtype == truncated.dtype == info["done"].dtype == torch.bool
    assert info["final_obs"].shape == (8, 4) and info["final_obs"].dtype == torch.float32
    episode = info["episode"]
    assert episode["return"].dtype == torch.float32 and episode["length"].dtype == torch.int64
    assert episode["mask"].dtype == torch.bool


def test_termination_autoresets_in_the_same_step():
    env = create_env("cartpole", 4)
    env.reset(seed=0)
    for _ in range(3):
        env.state = torch.zeros(4, 4)
        env.step(torch.tensor([0, 1, 0, 1]))
    env.state[0] = torch.tensor([2.39, 1.0, 0.0, 0.0])  # crosses x = 2.4 this step
    env.state[1] = torch.tensor([0.0, 0.0, -0.2, -1.0])  # crosses -12 degrees this step
    env.state[2:] = 0.0
    obs, reward, terminated, truncated, info = env.step(torch.tensor([1, 1, 0, 0]))
    assert terminated.tolist() == [True, True, False, False]
    assert not truncated.any()
    final = info["final_obs"]
    assert final[0, 0] > 2.4 and final[1, 2] < -0.2094
    assert obs[:2].abs().max() <= 0.05  # first obs of the next episodes
    assert torch.equal(final[2:], obs[2:])
    assert torch.equal(env.state.float(), obs)
    episode = info["episode"]
    assert episode["mask"].tolist() == [True, True, False, False]
    assert episode["length"][:2].tolist() == [4, 4]
    assert episode["return"][:2].tolist() == [4.0, 4.0]  # reward 1 on the terminating step too
    # The next step starts new episodes for rows 0 and 1 only.
    env.state = torch.zeros(4, 4)
    _, _, _, _, info = env.step(torch.tensor([0, 1, 0, 1]))
    assert not info["episode"]["mask"].any()
    env.state[:] = torch.tensor([3.0, 0.0, 0.0, 0.0])
    _, _, _, _, info = env.step(torch.zeros(4, dtype=torch.int64))
    assert info["episode"]["length"].tolist() == [2, 2, 6, 6]


@pytest.mark.parametrize("max_steps", [5, None])
def test_truncation(max_steps):
    kwargs = {} if max_steps is None else {"max_episode_steps": max_steps}
    limit = max_steps or 500
    env = create_env("cartpole", 3, **kwargs)
    env.reset(seed=0)
    for t in range(1, limit + 1):
        env.state[:] = 0.0  # keep the pole up
        obs, reward, terminated, truncated, info = env.step(torch.tensor([0, 1, 0]))
        assert not terminated.any()
        assert truncated.all() == (t == limit) and truncated.any() == (t == limit)
    assert info["episode"]["mask"].all()
    assert info["episode"]["length"].tolist() == [limit] * 3
    assert info["episode"]["return"].tolist() == [float(limit)] * 3
    assert torch.equal(info["final_obs"][:, 0::2], torch.zeros(3, 2))  # x, theta stay 0
    assert obs.abs().max() <= 0.05


def _rollout(env, seed, steps=150):
    obs, _ = env.reset(seed=seed)
    actions = torch.Generator().manual_seed(5)
    trajectory = [obs]
    for _ in range(steps):
        action = torch.randint(0, 2, (env.num_envs,), generator=actions)
        obs, reward, terminated, truncated, info = env.step(action)
        trajectory += [obs, reward, terminated, truncated, info["final_obs"]]
    return trajectory


def test_same_seed_same_trajectory_and_seeds_differ():
    a = _rollout(create_env("cartpole", 32), seed=11)
    b = _rollout(create_env("cartpole", 32), seed=11)
    c = _rollout(create_env("cartpole", 32), seed=12)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    assert sum(int(t.sum()) for t in a[3::5]) > 100  # many autoresets happened


def test_first_reset_uses_the_construction_seed():
    obs_default, _ = create_env("cartpole", 4, seed=9).reset()
    obs_seeded, _ = create_env("cartpole", 4).reset(seed=9)
    assert torch.equal(obs_default, obs_seeded)
    env = create_env("cartpole", 4, seed=9)
    first, _ = env.reset()
    second, _ = env.reset()
    assert not torch.equal(first, second)


def test_state_dict_round_trip(tmp_path):
    env = create_env("cartpole", 8, seed=2)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    actions = [torch.randint(0, 2, (8,), generator=gen) for _ in range(60)]
    for a in actions[:20]:
        env.step(a)
    torch.save(env.state_dict(), tmp_path / "env.pt")
    expected = [env.step(a) for a in actions[20:]]
    restored = create_env("cartpole", 8)
    restored.load_state_dict(torch.load(tmp_path / "env.pt", weights_only=True))
    for a, (obs, reward, _, _, info) in zip(actions[20:], expected, strict=True):
        obs2, reward2, _, _, info2 = restored.step(a)
        assert torch.equal(obs, obs2) and torch.equal(reward, reward2)
        assert torch.equal(info["episode"]["length"], info2["episode"]["length"])


def test_returned_tensors_do_not_alias_env_state():
    env = create_env("cartpole", 4)
    obs, _ = env.reset(seed=0)
    obs2, _, _, _, info = env.step(torch.zeros(4, dtype=torch.int64))
    snapshot = obs2.clone()
    env.state[:] = 1.0
    env.step(torch.zeros(4, dtype=torch.int64))
    assert torch.equal(obs2, snapshot)
    assert not torch.equal(obs, obs2) and info["final_obs"].data_ptr() != obs2.data_ptr()


def test_bad_action_shape_is_rejected():
    env = create_env("cartpole", 4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \[4\]"):
        env.step(torch.zeros(4, 1, dtype=torch.int64))
