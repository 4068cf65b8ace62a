"""The agent axis of ``TensorVectorEnv`` (``num_agents``), on a minimal subclass and on the
bundled ``two_agent_meet`` env, checked against hand-computed rewards, dones and counts."""

import io

import pytest
import torch

from ding_lite.envs import Box, Discrete, TensorVectorEnv, TwoAgentMeetEnv, create_env

L, S, R = 0, 1, 2  # two_agent_meet's actions: left, stay, right


class Drift(TensorVectorEnv):
    """Each agent moves by its clipped action; reward = its move; ends when any agent's
    position passes 2.5. obs = [position] per agent."""

    name = "drift"

    def __init__(self, num_envs: int, num_agents: int | None = None) -> None:
        super().__init__(
            num_envs=num_envs,
            obs_shape=(1,),
            action_space=Box(low=(-1.0,), high=(1.0,)),
            max_episode_steps=5,
            num_agents=num_agents,
        )
        self.pos = torch.zeros(self.batch_shape)
        self.reward_shape = self.batch_shape

    def _reset_state(self, mask):
        if mask is None:
            self.pos = torch.zeros(self.batch_shape)
        else:
            rows = mask if self.num_agents == 1 else mask.unsqueeze(1)
            self.pos = torch.where(rows, 0.0, self.pos)

    def _step_physics(self, action):
        move = action[..., 0]
        self.pos = self.pos + move
        ended = self.pos.abs() > 2.5
        return move.reshape(self.reward_shape), ended if ended.dim() == 1 else ended.any(1)

    def _obs(self):
        return self.pos.unsqueeze(-1).clone()


def test_num_agents_from_the_constructor_adds_the_agent_axis_after_the_copy_axis():
    env = Drift(2, num_agents=3)
    assert env.num_agents == 3 and env.batch_shape == (2, 3)
    assert "num_agents=3" in repr(env)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 3, 1)
    action = torch.tensor([[[1.0], [5.0], [-1.0]], [[0.5], [0.0], [0.0]]])  # 5.0 is clipped
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(action)
        assert reward.shape == (2, 3) and terminated.shape == truncated.shape == (2,)
        assert reward.tolist() == [[1.0, 1.0, -1.0], [0.5, 0.0, 0.0]]
        assert info["episode"]["return"].shape == (2, 3)
        assert info["episode"]["length"].shape == info["episode"]["mask"].shape == (2,)
    # Step 3: copy 0's agents reach |3| > 2.5 and end together; copy 1 goes on.
    assert terminated.tolist() == [True, False] and truncated.tolist() == [False, False]
    episode = info["episode"]
    assert episode["mask"].tolist() == [True, False] and episode["length"][0] == 3
    assert episode["return"][0].tolist() == [3.0, 3.0, -3.0]
    assert info["final_obs"][0, :, 0].tolist() == [3.0, 3.0, -3.0]
    assert obs[0].abs().sum() == 0 and torch.equal(obs[1], info["final_obs"][1])
    # Returns restart per copy: copy 0 from zero, copy 1 keeps its running sums.
    _, _, _, truncated, info = env.step(action)
    _, _, _, truncated, info = env.step(action)
    assert truncated.tolist() == [False, True]
    assert info["episode"]["return"][1].tolist() == [2.5, 0.0, 0.0]


def test_one_agent_has_no_agent_axis_whether_declared_or_passed():
    for env in (Drift(2), Drift(2, num_agents=1)):
        assert env.num_agents == 1 and env.batch_shape == (2,)
        assert "num_agents" not in repr(env)
        obs, _ = env.reset(seed=0)
        obs, reward, _, _, info = env.step(torch.ones(2, 1))
        assert obs.shape == (2, 1) and reward.shape == (2,)
        assert info["episode"]["return"].shape == (2,)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_num_agents_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match=f"num_agents must be a positive int, got {bad!r}"):
        Drift(2, num_agents=bad)


def test_a_reward_without_the_agent_axis_is_a_subclass_bug_named_as_such():
    env = Drift(2, num_agents=2)
    env.reward_shape = (4,)
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"reward of shape \[4\], expected \[2, 2\]"):
        env.step(torch.zeros(2, 2, 1))


def test_state_of_another_agent_count_is_refused():
    saved = Drift(2, num_agents=3).state_dict()
    with pytest.raises(ValueError, match=r"shape \[2, 3\].*keeps \[2\].*num_agents=1"):
        Drift(2).load_state_dict(saved)


# ---------------------------------------------------------------- two_agent_meet


def test_meet_env_is_registered_with_its_spaces():
    env = create_env("two_agent_meet", 3, seed=0)
    assert isinstance(env, TwoAgentMeetEnv)
    assert env.num_agents == 2 and env.batch_shape == (3, 2)
    assert env.obs_shape == (2,) and env.action_space == Discrete(3)
    assert env.max_episode_steps == 10 and env.size == 5
    assert env.optimal_team_return == 2.0
    assert create_env("two_agent_meet", 1, size=4).optimal_team_return == pytest.approx(1.9)
    obs, info = env.reset()
    assert info == {} and obs.dtype == torch.float32 and obs.shape == (3, 2, 2)
    # Agent 0 on cell 0 sees (own 0, other 1); agent 1 on cell 4 sees (own 1, other 0).
    assert obs.tolist() == [[[0.0, 1.0], [1.0, 0.0]]] * 3
    with pytest.raises(ValueError, match="size must be an int >= 2, got 1"):
        create_env("two_agent_meet", 1, size=1)


# Scripted actions of four copies over four steps, (agent 0, agent 1) per copy.
SCRIPT = [
    #   copy 0: meets   copy 1: meets  copy 2: walls   copy 3: crosses
    [(R, L), (R, S), (L, R), (R, S)],
    [(R, L), (R, S), (L, R), (S, L)],
    [(R, L), (R, L), (L, R), (S, L)],
    [(R, L), (S, S), (L, R), (R, L)],
]
# Hand-computed from the rules (WAIT_COST 0.1 to an agent whose cell did not change,
# MEET_REWARD 1.0 to both on meeting):
CELLS = [  # (agent 0, agent 1) cells after each step, before autoreset
    [(1, 3), (1, 4), (0, 4), (1, 4)],
    [(2, 2), (2, 4), (0, 4), (1, 3)],  # copy 0 meets on cell 2
    [(1, 3), (3, 3), (0, 4), (1, 2)],  # copy 0 restarted; copy 1 meets on cell 3
    [(2, 2), (0, 4), (0, 4), (2, 1)],  # copy 0 meets again; copy 3 swaps cells: no meeting
]
REWARDS = [
    [(0.0, 0.0), (0.0, -0.1), (-0.1, -0.1), (0.0, -0.1)],
    [(1.0, 1.0), (0.0, -0.1), (-0.1, -0.1), (-0.1, 0.0)],
    [(0.0, 0.0), (1.0, 1.0), (-0.1, -0.1), (-0.1, 0.0)],
    [(1.0, 1.0), (-0.1, -0.1), (-0.1, -0.1), (0.0, 0.0)],
]
TERMINATED = [
    [False, False, False, False],
    [True, False, False, False],
    [False, True, False, False],
    [True, False, False, False],
]
TRUNCATED = [[False] * 4, [False] * 4, [False] * 4, [False, False, True, True]]  # limit 4
# (copy, length, (return of agent 0, of agent 1)) of the episodes that end at each step.
ENDED = [
    [],
    [(0, 2, (1.0, 1.0))],
    [(1, 3, (1.0, 0.8))],
    [(0, 2, (1.0, 1.0)), (2, 4, (-0.4, -0.4)), (3, 4, (-0.2, -0.1))],
]


def _meet_env(num_envs=4):
    env = create_env("two_agent_meet", num_envs, seed=0, max_episode_steps=4)
    env.reset()
    return env


def test_meet_rewards_dones_and_episodes_match_the_hand_computed_script():
    env = _meet_env()
    finished = agent_steps = 0
    for t, actions in enumerate(SCRIPT):
        obs, reward, terminated, truncated, info = env.step(torch.tensor(actions))
        agent_steps += reward.numel()
        assert reward.dtype == torch.float32 and reward.shape == (4, 2)
        assert torch.allclose(reward, torch.tensor(REWARDS[t]), atol=1e-6), t
        assert terminated.tolist() == TERMINATED[t] and truncated.tolist() == TRUNCATED[t]
        done = [a or b for a, b in zip(TERMINATED[t], TRUNCATED[t], strict=True)]
        assert info["done"].tolist() == done
        cells = torch.tensor(CELLS[t], dtype=torch.float32) / 4
        own_other = torch.stack((cells, cells.flip(1)), dim=2)
        assert torch.equal(info["final_obs"], own_other), t
        start = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
        expected_obs = torch.where(torch.tensor(done)[:, None, None], start, own_other)
        assert torch.equal(obs, expected_obs), t  # autoreset: ended copies restart
        episode = info["episode"]
        mask = episode["mask"]
        assert mask.tolist() == done
        ended = [(c, int(episode["length"][c]), episode["return"][c].tolist()) for c in range(4)]
        ended = [e for e in ended if mask[e[0]]]
        assert [(c, n) for c, n, _ in ended] == [(c, n) for c, n, _ in ENDED[t]]
        for (_, _, got), (_, _, want) in zip(ended, ENDED[t], strict=True):
            assert got == pytest.approx(want, abs=1e-6)
        finished += int(mask.sum())
    assert finished == 5  # episodes (copies), each with one return per agent
    assert agent_steps == 4 * 4 * 2  # steps x copies x agents


def test_meet_optimum_is_reached_by_walking_inward():
    env = create_env("two_agent_meet", 2, seed=0)
    env.reset()
    inward = torch.tensor([[R, L], [R, L]])
    env.step(inward)
    _, _, terminated, _, info = env.step(inward)
    assert terminated.all() and info["episode"]["length"].tolist() == [2, 2]
    returns = info["episode"]["return"]
    assert returns.sum(1).tolist() == [env.optimal_team_return] * 2
    assert returns.flatten().tolist() == [1.0] * 4
    # An odd gap (size 4: cells 0 and 3) costs one wait: inward, then one agent waits.
    odd = create_env("two_agent_meet", 1, seed=0, size=4)
    odd.reset()
    odd.step(torch.tensor([[R, L]]))
    _, reward, terminated, _, info = odd.step(torch.tensor([[R, S]]))
    assert terminated.item() and reward[0].tolist() == pytest.approx([1.0, 0.9])
    assert info["episode"]["return"].sum().item() == pytest.approx(odd.optimal_team_return)


def test_meet_action_of_the_wrong_shape_is_a_one_line_error():
    env = _meet_env(3)
    for bad in (torch.zeros(3, dtype=torch.long), torch.zeros(3, 2, 1, dtype=torch.long)):
        with pytest.raises(ValueError) as err:
            env.step(bad)
        message = str(err.value)
        assert message.startswith("two_agent_meet: Discrete(n=3) action must have shape [3, 2]")
        assert "(2 agents per copy)" in message and "\n" not in message


def test_meet_state_dict_round_trip_continues_identically():
    env = _meet_env()
    for actions in SCRIPT[:2]:
        env.step(torch.tensor(actions))
    buffer = io.BytesIO()
    torch.save(env.state_dict(), buffer)
    expected = [env.step(torch.tensor(actions)) for actions in SCRIPT[2:]]
    other = create_env("two_agent_meet", 4, seed=5, max_episode_steps=4)
    buffer.seek(0)
    other.load_state_dict(torch.load(buffer, weights_only=True))
    for actions, want in zip(SCRIPT[2:], expected, strict=True):
        got = other.step(torch.tensor(actions))
        for a, b in zip(got[:4], want[:4], strict=True):
            assert torch.equal(a, b)
        for key in ("return", "length", "mask"):
            assert torch.equal(got[4]["episode"][key], want[4]["episode"][key])
        assert torch.equal(got[4]["final_obs"], want[4]["final_obs"])


def test_meet_full_reset_restores_the_start_and_clears_returns():
    env = _meet_env(2)
    env.step(torch.tensor([[R, L], [R, S]]))
    obs, _ = env.reset()
    assert obs.tolist() == [[[0.0, 1.0], [1.0, 0.0]]] * 2
    state = env.state_dict()
    assert state["episode_return"].shape == (2, 2) and not state["episode_return"].any()
    assert not state["episode_length"].any()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(
    "name, kwargs", [("two_agent_meet", {}), ("aircombat", {"opponent": "self"})]
)
def test_agent_envs_step_on_cuda_without_host_sync(name, kwargs):
    env = create_env(name, 64, device="cuda", **kwargs)
    env.reset(seed=0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    if name == "two_agent_meet":
        actions = [torch.randint(0, 3, (64, 2), device="cuda", generator=gen) for _ in range(8)]
    else:
        scale = torch.tensor([2.0, 1.0, 1.0], device="cuda")
        shift = torch.tensor([-1.0, 0.0, 0.0], device="cuda")
        actions = [
            torch.rand(64, 2, 3, device="cuda", generator=gen) * scale + shift for _ in range(8)
        ]
        for a in actions:
            a[..., 2].round_()
    ended = torch.zeros((), dtype=torch.int64, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any host sync inside step() raises
    try:
        for i in range(300):
            obs, reward, _, _, info = env.step(actions[i % 8])
            ended += info["done"].sum()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert obs.shape[:2] == reward.shape == (64, 2) and reward.device.type == "cuda"
    assert int(ended) > 0
