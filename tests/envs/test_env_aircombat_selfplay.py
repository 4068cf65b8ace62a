"""Air-combat self-play (``opponent="self"``): both fighters flown by the caller as agents 0
(blue, P1) and 1 (red, P2), each with its own observation and reward."""

import io
import math

import pytest
import torch

from ding_lite.envs import create_env
from ding_lite.envs.aircombat import Agent, create_agent, register_agent
from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.env import _STATE_KEYS
from ding_lite.utils.registry import RegistryError


def _actions(num_envs, steps, seed, fire_prob=0.3, agents=2):
    """Random ``[steps, N, agents, 3]`` actions: rudder, throttle, fire."""
    gen = torch.Generator().manual_seed(seed)
    u = torch.rand(steps, num_envs, agents, 3, generator=gen)
    a = u * torch.tensor([2.0, 1.0, 1.0]) - torch.tensor([1.0, 0.0, 0.0])
    a[..., 2] = (u[..., 2] < fire_prob).float()
    return a


class Replay(Agent):
    """Flies P2 with recorded ``[N, 3]`` actions, one per call."""

    def __init__(self, actions):
        super().__init__(num_envs=actions.shape[1])
        self.actions = iter(actions)

    def act(self, obs, inbound=None):
        a = next(self.actions)
        return {"rudder": a[:, 0], "throttle": a[:, 1], "fire": a[:, 2]}


def _close_quarters(env):
    """Both fighters 12 km apart, nose to nose: missiles fly and hit within a few steps."""
    n = env.num_envs
    env.x[:] = torch.tensor([[-6_000.0, 6_000.0]] * n)
    env.y[:] = torch.linspace(-3_000.0, 3_000.0, n)[:, None]
    env.heading[:] = torch.tensor([[0.0, math.pi]] * n)


def test_self_play_declares_two_agents_and_the_agent_axis():
    env = create_env("aircombat", 6, seed=2, opponent="self")
    assert env.self_play and env.opponent is None
    assert env.num_agents == 2 and env.batch_shape == (6, 2) and env.obs_shape == (10,)
    obs, _ = env.reset()
    assert obs.shape == (6, 2, 10) and obs.dtype == torch.float32 and obs.is_contiguous()
    assert torch.equal(env.obs_both(), obs)
    # Same distance and alive flags from both sides; each sees the other's speed.
    assert torch.equal(obs[:, 0, 6], obs[:, 1, 6])
    assert (obs[:, :, [4, 5, 9]] == 1).all()
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(_actions(6, 1, 0)[0])
    assert obs.shape == info["final_obs"].shape == (6, 2, 10)
    assert reward.shape == (6, 2) and reward.dtype == torch.float32
    assert terminated.shape == truncated.shape == info["done"].shape == (6,)
    episode = info["episode"]
    assert episode["return"].shape == episode["outcome"].shape == (6, 2)
    assert episode["length"].shape == episode["mask"].shape == (6,)
    assert info["combat"]["outcome"].shape == (6, 2)
    assert info["combat"]["missiles_fired"].shape == (6, 2)


def test_other_opponents_keep_one_agent():
    for opponent in ("rule_based", "placeholder", "random"):
        env = create_env("aircombat", 3, opponent=opponent)
        assert env.num_agents == 1 and not env.self_play and env.opponent is not None
        obs, _ = env.reset()
        assert obs.shape == (3, 10)
        _, reward, _, _, info = env.step(torch.zeros(3, 3))
        assert reward.shape == (3,) and info["episode"]["outcome"].shape == (3,)


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("reward", ["shaped", "zero"])
def test_agent_0_is_the_one_agent_env_with_agent_1_as_its_opponent(compact, reward):
    """Self-play = the one-agent env whose P2 flies agent 1's actions: agent 0's obs,
    reward and outcome are P1's, agent 1's obs is P2's."""
    n, steps = 16, 120
    actions = _actions(n, steps, seed=1)
    selfplay = create_env("aircombat", n, seed=4, opponent="self", reward=reward)
    single = create_env("aircombat", n, seed=4, opponent=Replay(actions[:, :, 1]), reward=reward)
    ended = 0
    for env in (selfplay, single):
        env._compact = compact
        env.reset()
        _close_quarters(env)
    for t in range(steps):
        obs, rew, term, trunc, info = selfplay.step(actions[t])
        obs1, rew1, term1, trunc1, info1 = single.step(actions[t, :, 0])
        # P2's observation as the one-agent env keeps it for its opponent (obs_both() would
        # observe every copy afresh, and atan2/hypot over all copies may round a reset copy's
        # last bit differently from the same maths over the reset copies alone).
        assert torch.equal(obs[:, 0], obs1) and torch.equal(obs[:, 1], single._p2_obs)
        assert torch.equal(info["final_obs"][:, 0], info1["final_obs"])
        assert torch.equal(rew[:, 0], rew1), t
        assert torch.equal(term, term1) and torch.equal(trunc, trunc1)
        outcome = info["episode"]["outcome"]
        assert torch.equal(outcome[:, 0], info1["episode"]["outcome"])
        assert torch.equal(outcome[:, 1], -outcome[:, 0])
        assert torch.equal(info["episode"]["return"][:, 0], info1["episode"]["return"])
        assert torch.equal(info["combat"]["missiles_fired"], info1["combat"]["missiles_fired"])
        if reward == "zero":  # the outcome alone: each agent's is the other's negated
            assert torch.equal(rew[:, 1], -rew[:, 0])
        ended += int(info["done"].sum())
    assert ended > n  # hits happened and copies restarted


def _swapped(state):
    """``state`` with the two fighters' roles exchanged."""
    state = dict(state)
    for key in (*_STATE_KEYS, "episode_return"):
        state[key] = state[key].flip(1)
    return state


def test_each_agent_is_rewarded_from_its_own_side():
    """Exchanging the fighters exchanges the agents' obs, rewards and outcomes: agent 1 gets
    P1's reward formula from its own side, survival and evaded missiles included."""
    n, steps = 16, 20
    actions = _actions(n, steps, seed=3)
    env = create_env("aircombat", n, seed=6, opponent="self")
    mirror = create_env("aircombat", n, seed=6, opponent="self")
    env.reset()
    _close_quarters(env)
    mirror.reset()
    mirror.load_state_dict(_swapped(env.state_dict()))
    live = torch.ones(n, dtype=torch.bool)  # copies whose first episode goes on
    nonzero_shaping = False
    outcomes = []
    for t in range(steps):
        obs, rew, term, _, info = env.step(actions[t])
        obs_m, rew_m, term_m, _, info_m = mirror.step(actions[t].flip(1))
        final, final_m = info["final_obs"][live], info_m["final_obs"][live].flip(1)
        assert torch.allclose(final, final_m, atol=1e-5), t
        assert torch.equal(rew[live], rew_m[live].flip(1)), t
        assert torch.equal(term[live], term_m[live])
        ended = info["done"] & live
        outcome = info["episode"]["outcome"]
        assert torch.equal(outcome[ended], info_m["episode"]["outcome"][ended].flip(1))
        outcomes += outcome[ended].tolist()
        shaping = rew - info["episode"]["outcome"]
        nonzero_shaping |= bool((shaping[live].abs() > 0.01).any())  # missile terms
        live &= ~info["done"]
    assert not live.any() and nonzero_shaping  # every first episode ended, shaping paid
    assert [1.0, -1.0] in outcomes and [-1.0, 1.0] in outcomes  # each side won somewhere


def test_a_hit_is_a_win_for_the_shooter_and_a_loss_for_the_target():
    env = create_env("aircombat", 2, seed=0, opponent="self")
    env.reset()
    # Agent 1 (red) at the origin heading east; blue's missile 600 m behind it, flying east
    # (copy 0: hits this step) or west (copy 1: misses).
    env.x[:] = torch.tensor([[-20_000.0, 0.0]] * 2)
    env.y[:] = 0.0
    env.heading[:] = torch.tensor([[math.pi, 0.0]] * 2)
    env.m_active[:, 0, 0] = 1.0
    env.m_x[:, 0, 0], env.m_y[:, 0, 0] = -600.0, 0.0
    env.m_cx[:, 0, 0] = torch.tensor([1.0, -1.0])
    env.m_cy[:, 0, 0] = 0.0
    env.m_fuel[:, 0, 0] = 10.0
    env.stock[:, 0] = 3.0
    env.fired[:, 0] = 1
    still = torch.tensor([0.0, 0.5, 0.0]).expand(2, 2, 3)
    obs, reward, terminated, _, info = env.step(still)
    assert terminated.tolist() == [True, False]
    # Copy 0: blue wins (+1 and its survival bonus), red loses and, dead, earns nothing else.
    assert reward[0].tolist() == pytest.approx([1.0 + P.SURVIVAL_REWARD, -1.0])
    # Copy 1: the missile flies on; both alive: the survival bonus each.
    assert reward[1].tolist() == pytest.approx([P.SURVIVAL_REWARD] * 2)
    assert info["episode"]["outcome"][0].tolist() == [1.0, -1.0]
    assert info["combat"]["outcome"][0].tolist() == [1.0, -1.0]
    assert info["episode"]["return"][0].tolist() == reward[0].tolist()
    final = info["final_obs"][0]
    assert final[0, 9] == 0.0 and final[1, 5] == 0.0  # blue sees red dead; red sees itself dead
    assert (obs[0, :, [4, 5, 9]] == 1).all()  # copy 0 restarted for both agents


def test_dict_actions_and_a_fixed_throttle():
    a = _actions(5, 20, seed=5)
    envs = [create_env("aircombat", 5, seed=1, opponent="self") for _ in range(2)]
    for env in envs:
        env.reset()
    for t in range(20):
        out_t = envs[0].step(a[t])
        out_d = envs[1].step(
            {"rudder": a[t, ..., 0], "throttle": a[t, ..., 1], "fire": a[t, ..., 2]}
        )
        assert torch.equal(out_t[0], out_d[0]) and torch.equal(out_t[1], out_d[1])
    fixed = create_env("aircombat", 5, seed=1, opponent="self", throttle=1.0)
    full = create_env("aircombat", 5, seed=1, opponent="self")
    fixed.reset()
    full.reset()
    for t in range(20):
        throttle_one = a[t].clone()
        throttle_one[..., 1] = 1.0
        out_f = fixed.step(a[t][..., [0, 2]])
        out_full = full.step(throttle_one)
        assert torch.equal(out_f[0], out_full[0]) and torch.equal(out_f[1], out_full[1])
    with pytest.raises(ValueError, match=r"shape \[5, 2, 2\] \(2 agents per copy\), got \[5, 2\]"):
        fixed.step(torch.zeros(5, 2))


def test_wrong_action_shape_and_bad_options_are_one_line_errors():
    env = create_env("aircombat", 4, opponent="self")
    env.reset()
    with pytest.raises(ValueError, match=r"shape \[4, 2, 3\] \(2 agents per copy\), got \[4, 3\]"):
        env.step(torch.zeros(4, 3))
    with pytest.raises(ValueError, match="opponent_kwargs .* opponent='self'"):
        create_env("aircombat", 2, opponent="self", opponent_kwargs={"fire_prob": 0.1})
    with pytest.raises(RegistryError, match="'self' is self-play, not an agent"):
        create_agent("self", num_envs=2)
    with pytest.raises(RegistryError, match="'self' is reserved for self-play"):
        register_agent("self", Replay)
    with pytest.raises(RegistryError, match="known: rule_based, placeholder, random.*self"):
        create_agent("selv", num_envs=2)


def test_seed_reproduces_and_state_dict_round_trip_continues_identically():
    n = 8
    actions = _actions(n, 60, seed=7)
    env = create_env("aircombat", n, seed=9, opponent="self")
    first, _ = env.reset()
    again = create_env("aircombat", n, seed=9, opponent="self")
    assert torch.equal(again.reset()[0], first)
    for t in range(30):
        env.step(actions[t])
    buffer = io.BytesIO()
    torch.save(env.state_dict(), buffer)
    expected = [env.step(actions[t]) for t in range(30, 60)]
    other = create_env("aircombat", n, seed=0, opponent="self")
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    other.load_state_dict(state)
    for t, want in zip(range(30, 60), expected, strict=True):
        got = other.step(actions[t])
        for a, b in zip(got[:4], want[:4], strict=True):
            assert torch.equal(a, b), t
        for key in ("return", "length", "mask", "outcome"):
            assert torch.equal(got[4]["episode"][key], want[4]["episode"][key])
    with pytest.raises(ValueError, match=r"num_agents=1"):
        create_env("aircombat", n, opponent="placeholder").load_state_dict(state)


def test_zero_sum_reward_is_half_the_difference_of_the_shaped_rewards():
    """reward="zero_sum": each agent gets (own shaped - other's shaped) / 2, so the columns
    negate each other and a truce (both alive, nobody firing) pays nothing; the dynamics are
    those of the shaped env."""
    shaped = create_env("aircombat", 4, seed=3, opponent="self", reward="shaped")
    zero_sum = create_env("aircombat", 4, seed=3, opponent="self", reward="zero_sum")
    shaped.reset()
    zero_sum.reset()
    g = torch.Generator().manual_seed(0)
    for _ in range(60):
        action = torch.rand(4, 2, 3, generator=g) * 2 - 1
        obs_a, r_a, term_a, _, _ = shaped.step(action)
        obs_b, r_b, term_b, _, _ = zero_sum.step(action)
        assert torch.equal(obs_a, obs_b) and torch.equal(term_a, term_b)
        torch.testing.assert_close(r_b, (r_a - r_a.flip(1)) * 0.5, rtol=0, atol=1e-7)
        assert torch.equal(r_b[:, 0], -r_b[:, 1])
    with pytest.raises(ValueError, match="zero_sum' needs opponent='self'"):
        create_env("aircombat", 1, opponent="rule_based", reward="zero_sum")


@pytest.mark.parametrize("opponent", ["self", "placeholder"])
def test_survival_reward_sets_the_bonus_per_step_alive(opponent):
    """``survival_reward`` replaces SURVIVAL_REWARD in the shaped reward and nothing else:
    the same actions give the same dynamics, and each step's reward differs by the bonus
    difference wherever that side is alive after the step."""
    default = create_env("aircombat", 4, seed=3, opponent=opponent)
    without = create_env("aircombat", 4, seed=3, opponent=opponent, survival_reward=0.0)
    default.reset()
    without.reset()
    _close_quarters(default)
    _close_quarters(without)
    agents = 2 if opponent == "self" else 1
    actions = _actions(4, 40, seed=5, fire_prob=0.5, agents=agents)
    for action in actions:
        action = action if agents == 2 else action[:, 0]
        obs_a, r_a, term_a, _, info = default.step(action)
        alive = info["final_obs"][..., 5]  # each side's own alive flag, before any autoreset
        obs_b, r_b, term_b, _, _ = without.step(action)
        assert torch.equal(obs_a, obs_b) and torch.equal(term_a, term_b)
        torch.testing.assert_close(r_a - r_b, alive * P.SURVIVAL_REWARD, rtol=0, atol=1e-7)
    with pytest.raises(ValueError, match="survival_reward must be a finite number"):
        create_env("aircombat", 1, survival_reward=float("nan"))


@pytest.mark.parametrize("opponent", ["self", "placeholder"])
def test_draw_reward_is_added_where_a_match_ends_undecided(opponent):
    """``draw_reward`` is added to a side's reward in the step its match ends with an outcome
    of 0 (time limit, both dry, both hit at once) and nowhere else; the dynamics are those of
    the env without it."""
    kwargs = dict(seed=3, opponent=opponent, max_episode_steps=20)
    plain = create_env("aircombat", 8, **kwargs)
    costly = create_env("aircombat", 8, draw_reward=-0.5, **kwargs)
    plain.reset()
    costly.reset()
    _close_quarters(plain)
    _close_quarters(costly)
    agents = 2 if opponent == "self" else 1
    draws = decided = 0
    for action in _actions(8, 60, seed=5, fire_prob=0.5, agents=agents):
        action = action if agents == 2 else action[:, 0]
        obs_a, r_a, term_a, trunc_a, info = plain.step(action)
        obs_b, r_b, term_b, trunc_b, _ = costly.step(action)
        assert torch.equal(obs_a, obs_b) and torch.equal(term_a | trunc_a, term_b | trunc_b)
        done = info["done"] if agents == 1 else info["done"][:, None]
        draw = done & (info["episode"]["outcome"] == 0)
        torch.testing.assert_close(r_b - r_a, draw * -0.5, rtol=0, atol=1e-7)
        draws += int(draw.sum())
        decided += int((done & (info["episode"]["outcome"] != 0)).sum())
    assert draws > 0 and decided > 0  # both kinds of ending were checked


def test_draw_reward_at_the_time_limit_by_hand():
    """Nobody fires for 10 steps with a 10-step limit and the outcome-only reward: every
    step pays 0 but the last, which pays the draw reward to both sides."""
    env = create_env(
        "aircombat", 2, seed=1, opponent="self", reward="zero", max_episode_steps=10,
        draw_reward=-0.25,
    )  # fmt: skip
    env.reset()
    for t in range(10):
        _, reward, terminated, truncated, _ = env.step(torch.zeros(2, 2, 3))
        want = -0.25 if t == 9 else 0.0
        assert torch.equal(reward, torch.full((2, 2), want))
    assert truncated.all() and not terminated.any()
    for bad in (float("nan"), "high", True):
        with pytest.raises(ValueError, match="draw_reward must be a"):
            create_env("aircombat", 1, draw_reward=bad)
