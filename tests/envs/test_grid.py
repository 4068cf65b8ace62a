"""The grid env: shapes, seeding, the cue, the resources' rewards and competition, walls,
per-copy resets, and a few iterations of grid_ppo in the serial pipeline."""

import math

import numpy as np
import pytest
import torch

from ding_lite.envs import create_env, list_envs
from ding_lite.envs.grid import (
    AGENTS,
    CHANNELS,
    CUE,
    DOWN,
    LEFT,
    RES_A,
    RES_B,
    RIGHT,
    STAY,
    UP,
    WALL,
)


def _env(num_envs=2, **kwargs):
    options = dict(num_agents=2, size=5, obs_width=3, obs_height=3, num_resources=1)
    env = create_env("grid", num_envs, seed=0, **{**options, **kwargs})
    env.reset()
    return env


def _place(env, pos, res_pos, paying, t=1):
    """Puts every copy in the same hand-built state."""
    n = env.num_envs
    env.pos = torch.tensor(pos).repeat(n, 1, 1)
    env.res_pos = torch.tensor(res_pos).repeat(n, 1, 1)
    env.res_timer = torch.zeros(n, len(res_pos), dtype=torch.int64)
    env.paying = torch.full((n,), paying)
    env.t = torch.full((n,), t)


def test_registered_with_window_observations_and_an_agent_axis():
    assert "grid" in list_envs()
    env = create_env("grid", 3, seed=0)
    obs, _ = env.reset()
    c, h, w = len(CHANNELS), 11, 11
    assert env.obs_shape == (c, h, w) and obs.shape == (3, 4, c, h, w)
    obs, reward, terminated, truncated, info = env.step(torch.zeros(3, 4, dtype=torch.int64))
    assert reward.shape == (3, 4) and terminated.shape == truncated.shape == (3,)
    assert info["episode"]["return"].shape == (3, 4)
    # Each agent sits in the middle: never a wall there, and it is not in the agents plane
    # unless another agent shares its cell.
    assert obs[:, :, WALL, h // 2, w // 2].eq(0).all()


def test_same_seed_same_trajectory_other_seed_other_layout():
    def run(seed):
        env = create_env("grid", 4, seed=seed, size=7, obs_width=5, obs_height=5, max_steps=16)
        frames = [env.reset()[0]]
        gen = torch.Generator().manual_seed(7)
        for _ in range(40):  # past the end of the first episodes: resets are seeded too
            action = torch.randint(0, 5, (4, 4), generator=gen)
            obs, reward, *_ = env.step(action)
            frames += [obs, reward]
        return frames

    first, again, other = run(3), run(3), run(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])


def test_the_cue_shows_the_paying_kind_for_cue_steps_then_vanishes():
    env = _env(cue_steps=2)
    env.paying = torch.tensor([0, 1])
    env.t = torch.zeros(2, dtype=torch.int64)
    cue = env._obs()[:, :, CUE]
    assert cue[0].eq(1).all() and cue[1].eq(-1).all()
    stay = torch.full((2, 2), STAY)
    assert env.step(stay)[0][:, :, CUE].abs().eq(1).all()  # step 1 < 2: still shown
    assert env.step(stay)[0][:, :, CUE].eq(0).all()


def test_window_shows_walls_resources_and_other_agents_where_they_are():
    env = _env(num_envs=1)
    # Agent 0 in the top-left corner, agent 1 right of it; A below agent 0, B two cells away.
    _place(env, pos=[[0, 0], [0, 1]], res_pos=[[1, 0], [0, 2]], paying=0)
    obs = env._obs()[0]
    assert obs[0, WALL].tolist() == [[1, 1, 1], [1, 0, 0], [1, 0, 0]]
    assert obs[0, AGENTS].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert obs[0, RES_A].tolist() == [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert obs[1, RES_B].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert obs[1, AGENTS].tolist() == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]


def test_paying_kind_pays_the_other_costs_and_a_wall_stops_a_move():
    env = _env(num_envs=2, wrong_penalty=0.5)
    _place(env, pos=[[0, 0], [2, 2]], res_pos=[[1, 0], [2, 3]], paying=0)
    env.paying = torch.tensor([0, 1])  # copy 0: A pays; copy 1: B pays
    # Agent 0 steps down onto A; agent 1 steps right onto B.
    _, reward, *_ = env.step(torch.tensor([[DOWN, RIGHT], [DOWN, RIGHT]]))
    assert reward.tolist() == [[1.0, -0.5], [-0.5, 1.0]]
    assert env.res_timer.tolist() == [[10, 10], [10, 10]]
    _place(env, pos=[[0, 0], [2, 2]], res_pos=[[4, 4], [3, 3]], paying=0)
    env.step(torch.tensor([[UP, LEFT], [LEFT, STAY]]))
    assert env.pos[0].tolist() == [[0, 0], [2, 1]] and env.pos[1, 0].tolist() == [0, 0]


def test_agents_that_reach_a_resource_together_split_it_and_it_regrows():
    env = _env(num_envs=1, regrow_steps=3)
    _place(env, pos=[[0, 1], [2, 1]], res_pos=[[1, 1], [4, 4]], paying=0)
    _, reward, *_ = env.step(torch.tensor([[DOWN, UP]]))
    assert reward.tolist() == [[0.5, 0.5]]
    stay = torch.full((1, 2), STAY)
    rewards, seen = [], []
    for _ in range(4):
        obs, reward, *_ = env.step(stay)
        rewards.append(reward.sum().item())
        seen.append(obs[0, 0, RES_A].sum().item())
    # Seen absent after the taking step and the next two, present after the third (the
    # timer counts 3, 2, 1, 0): taken again on the fourth step, split again.
    assert seen[:3] == [0.0, 0.0, 1.0] and rewards == [0.0, 0.0, 0.0, 1.0]


def test_copies_reset_on_their_own_and_final_obs_is_the_last_of_the_episode():
    env = _env(num_envs=2, max_steps=3)
    stay = torch.full((2, 2), STAY)
    env.step(stay)
    env._ep_length[1] = 0  # copy 1 started its episode a step later
    env.step(stay)
    before = env._obs()
    obs, _, _, truncated, info = env.step(stay)
    assert truncated.tolist() == [True, False]
    assert torch.equal(info["final_obs"], before)  # staying changes nothing but the cue
    assert env.t.tolist() == [0, 3]  # copy 0 starts again with the cue shown
    assert obs[0, :, CUE].abs().eq(1).all() and obs[1, :, CUE].eq(0).all()


def test_a_random_policy_earns_a_small_positive_return():
    env = create_env("grid", 32, seed=0)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    returns = []
    for _ in range(32):
        *_, info = env.step(torch.randint(0, 5, (32, 4), generator=gen))
        if info["episode"]["mask"].any():
            returns.append(info["episode"]["return"][info["episode"]["mask"]])
    mean = torch.cat(returns).mean().item()
    assert 0.05 < mean < 1.0


def test_render_draws_copy_zero_and_state_round_trips():
    env = _env(num_envs=2)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (7 * 32, 7 * 32, 3)
    state = env.state_dict()
    twin = _env(num_envs=2)
    twin.load_state_dict(state)
    action = torch.tensor([[DOWN, LEFT], [UP, STAY]])
    assert torch.equal(env.step(action)[0], twin.step(action)[0])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(obs_width=4), "obs_width must be odd"),
        (dict(num_agents=1), "num_agents must be an int >= 2"),
        (dict(size=2, num_resources=2), "do not fit on 4 cells"),
        (dict(wrong_penalty=1.0), r"wrong_penalty must be in \[0, 1\)"),
    ],
)
def test_bad_options_are_refused_naming_the_key(options, message):
    with pytest.raises(ValueError, match=message):
        create_env("grid", 1, **options)


def test_grid_ppo_trains_a_few_iterations_in_the_serial_pipeline(tmp_path):
    from ding_lite import serial_pipeline
    from ding_lite.config.config import compile_config

    overrides = [
        "env.num_envs=4",
        "policy.learn.batch_size=128",
        "policy.collect.n_steps=16",
        "policy.learn.bptt_horizon=16",
        "evaluator.n_episodes=8",
    ]
    cfg = compile_config("grid_ppo", overrides, exp_dir=str(tmp_path), max_train_iter=3)
    run = serial_pipeline(cfg)
    assert run.result["train_iter"] == 3
    assert math.isfinite(run.result["eval_return_mean"])
    assert run.result["skipped_steps"] == 0
    assert all(torch.isfinite(p).all() for p in run.policy.model.parameters())
