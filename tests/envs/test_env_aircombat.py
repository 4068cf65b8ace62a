"""Air-combat env: physics invariants, hand-built hits, the CrankAgent and the env contract."""

import math

import pytest
import torch

from ding_lite.envs import AirCombatEnv, Box, Hybrid, create_env
from ding_lite.envs.aircombat import CrankAgent, create_agent
from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.agents import APPROACH, DEFEND, DEFEND_RANGE, FIRE, FIRE_RANGE


def _rollout(env, agent, steps):
    obs, _ = env.reset()
    for _ in range(steps):
        action = agent.act(obs, inbound=env.inbound_missile()[:, 0])
        obs, reward, terminated, truncated, info = env.step(action)
        agent.reset(info["done"])
        yield obs, reward, terminated, truncated, info


def test_create_env_spaces_and_options():
    env = create_env("aircombat", 5, device="cpu", seed=3, opponent="placeholder")
    assert isinstance(env, AirCombatEnv)
    assert env.action_space == Hybrid(continuous=Box((-1.0, 0.0), (1.0, 1.0)), discrete=(2,))
    obs, info = env.reset()
    assert obs.shape == (5, 10) and obs.dtype == torch.float32 and info == {}
    assert (obs[:, 4] == 1).all() and (obs[:, 5] == 1).all() and (obs[:, 9] == 1).all()
    with pytest.raises(ValueError, match="reward must be"):
        create_env("aircombat", 2, reward="sparse")
    with pytest.raises(ValueError, match="unknown agent 'crank'; known: rule_based"):
        create_env("aircombat", 2, opponent="crank")
    with pytest.raises(ValueError, match=r"shape \[5, 3\]"):
        env.step(torch.zeros(5, 2))


def test_dict_and_tensor_actions_agree():
    envs = [create_env("aircombat", 8, seed=1, opponent="random") for _ in range(2)]
    for env in envs:
        env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        a = torch.rand(8, 3, generator=gen) * torch.tensor([2.0, 1.0, 1.0]) - torch.tensor(
            [1.0, 0.0, 0.0]
        )
        a[:, 2] = (a[:, 2] > 0.8).float()
        out_t = envs[0].step(a)
        out_d = envs[1].step({"rudder": a[:, 0], "throttle": a[:, 1], "fire": a[:, 2]})
        assert torch.equal(out_t[0], out_d[0]) and torch.equal(out_t[1], out_d[1])


def test_long_random_rollout_is_finite_bounded_and_depletes_missiles():
    n = 256
    env = create_env("aircombat", n, seed=0, opponent="random")
    agent = create_agent("random", num_envs=n, seed=7, fire_prob=0.2)
    fired = torch.zeros(2)
    ended = 0
    for obs, reward, _, _, info in _rollout(env, agent, 1500):
        for o in (obs, info["final_obs"]):
            assert torch.isfinite(o).all()
            assert (o[:, [0, 1, 2, 7]].abs() <= 1.0 + 1e-6).all()
            assert ((o[:, 4] >= 0) & (o[:, 4] <= 1)).all()
            assert ((o[:, 6] >= 0) & (o[:, 6] <= 1)).all()
        assert torch.isfinite(reward).all()
        assert (env.x.abs() <= P.ARENA_HALF).all() and (env.y.abs() <= P.ARENA_HALF).all()
        assert (env.stock >= 0).all() and (env.fired <= P.MISSILES).all()
        combat = info["combat"]
        mask = combat["mask"]
        fired += combat["missiles_fired"][mask].sum(0).float()
        ended += int(mask.sum())
        # Stock and launches add up to the load-out.
        assert torch.equal(env.stock + env.fired.float(), torch.full_like(env.stock, 4.0))
    assert ended > n and (fired > ended).all()


def _still(env):
    zeros = torch.zeros(env.num_envs)
    return {"rudder": zeros, "throttle": zeros + 0.5, "fire": zeros}


@pytest.mark.parametrize("compact", [True, False])
def test_a_hit_destroys_and_ends_the_episode_with_a_win(compact):
    env = create_env("aircombat", 2, seed=0, opponent="placeholder", reward="zero")
    env._compact = compact  # fly only the slots in flight (CPU default) or every slot
    env.reset()
    # P2 at the origin heading east at 225 m/s; P1's first missile 600 m behind it, flying
    # east at 800 m/s, so it passes the target within this step. In copy 1 the missile
    # points away and cannot reach it.
    env.x[:] = torch.tensor([[-20_000.0, 0.0]] * 2)
    env.y[:] = 0.0
    env.heading[:] = torch.tensor([[math.pi, 0.0]] * 2)
    env.m_active[:, 0, 0] = True
    env.m_x[:, 0, 0], env.m_y[:, 0, 0] = -600.0, 0.0
    env.m_cx[:, 0, 0] = torch.tensor([1.0, -1.0])
    env.m_cy[:, 0, 0] = 0.0
    env.m_fuel[:, 0, 0] = 10.0
    env.stock[:, 0] = 3.0
    env.fired[:, 0] = 1
    obs, reward, terminated, truncated, info = env.step(_still(env))
    assert terminated.tolist() == [True, False] and not truncated.any()
    assert reward.tolist() == [1.0, 0.0]
    final = info["final_obs"]
    assert final[0, 9] == 0.0 and final[0, 5] == 1.0  # enemy destroyed, P1 alive
    combat = info["combat"]
    assert combat["mask"].tolist() == [True, False]
    assert combat["outcome"][0] == 1.0 and combat["length"][0] == 1
    assert torch.equal(info["episode"]["outcome"], combat["outcome"])  # the generic report
    assert combat["missiles_fired"][0].tolist() == [1, 0]
    assert obs[0, 9] == 1.0 and obs[0, 4] == 1.0  # copy 0 reset: a fresh episode


def _face_off(env, p1_heading):
    """P1 20 km west of P2 (P2 heading east, away); both cooled down with 4 missiles."""
    env.reset()
    env.x[:] = torch.tensor([[-20_000.0, 0.0]] * env.num_envs)
    env.y[:] = 0.0
    env.heading[:] = torch.stack([p1_heading, torch.zeros(env.num_envs)], 1)


def test_a_launch_without_lock_spends_the_missile_and_counts_as_wasted():
    env = create_env("aircombat", 2, seed=0, opponent="placeholder", throttle=1.0)
    # Copy 0 faces P2 (locks), copy 1 faces away (enemy 180 degrees off the nose).
    _face_off(env, torch.tensor([0.0, math.pi]))
    obs, reward, _, _, _ = env.step(torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    assert env.stock[:, 0].tolist() == [3.0, 3.0] and env.fired[:, 0].tolist() == [1, 1]
    assert env.m_active[:, 0].sum(-1).tolist() == [1, 0]
    survival = P.SURVIVAL_REWARD
    assert reward.tolist() == pytest.approx([survival, survival - P.WASTED_MISSILE_PENALTY])
    assert (env.cooldown[:, 0] == P.LAUNCH_COOLDOWN).all()  # the launcher cycled either way


@pytest.mark.parametrize("compact", [True, False])
def test_an_evaded_enemy_missile_earns_the_defeated_reward(compact):
    env = create_env("aircombat", 3, seed=0, opponent="placeholder")
    env._compact = compact
    _face_off(env, torch.zeros(3))
    # A P2 missile with one second of fuel, far from P1, in copies 0 and 1: it runs out this
    # step. Copy 1's P1 is also being hit by another P2 missile; copy 2 has no P2 missile.
    env.m_active[:2, 1, 0] = True
    env.m_x[:2, 1, 0], env.m_y[:2, 1, 0] = 30_000.0, 30_000.0
    env.m_cx[:2, 1, 0], env.m_cy[:2, 1, 0] = 1.0, 0.0
    env.m_fuel[:2, 1, 0] = 1.0
    env.m_active[1, 1, 1] = True
    env.m_x[1, 1, 1], env.m_y[1, 1, 1] = -20_300.0, 0.0  # 300 m ahead of P1, head-on
    env.m_cx[1, 1, 1], env.m_cy[1, 1, 1] = 1.0, 0.0
    env.m_fuel[1, 1, 1] = 10.0
    env.heading[1, 0] = math.pi
    env.stock[:2, 1] = torch.tensor([3.0, 2.0])
    _, reward, terminated, _, _ = env.step(_still(env))
    assert not env.m_active[:, 1].any()
    assert terminated.tolist() == [False, True, False]
    survival, evaded = P.SURVIVAL_REWARD, P.DEFEATED_MISSILE_REWARD
    # Copy 1: P1 died, so neither the survival nor the evasion term counts.
    assert reward.tolist() == pytest.approx([survival + evaded, -1.0, survival])
    zero = create_env("aircombat", 1, seed=0, opponent="placeholder", reward="zero")
    _face_off(zero, torch.zeros(1))
    zero.m_active[0, 1, 0] = True
    zero.m_x[0, 1, 0], zero.m_y[0, 1, 0], zero.m_fuel[0, 1, 0] = 30_000.0, 30_000.0, 1.0
    assert zero.step(_still(zero))[1].tolist() == [0.0]


@pytest.mark.parametrize("compact", [True, False])
def test_the_warner_sees_missiles_within_its_range_only(compact):
    env = create_env("aircombat", 2, seed=0, opponent="placeholder")
    env._compact = compact
    _face_off(env, torch.zeros(2))
    # One P1 missile toward P2 in each copy: 5 km behind P2 in copy 0, 30 km in copy 1.
    env.m_active[:, 0, 0] = True
    env.m_x[:, 0, 0] = torch.tensor([-5_000.0, -30_000.0])
    env.m_y[:, 0, 0], env.m_cx[:, 0, 0], env.m_cy[:, 0, 0] = 0.0, 1.0, 0.0
    env.m_fuel[:, 0, 0] = 40.0
    assert not env.inbound_missile().any()  # nothing seen before a step
    env.step(_still(env))
    assert env.inbound_missile()[:, 1].tolist() == [True, False]
    assert not env.inbound_missile()[:, 0].any()  # P1 has nothing inbound


def test_fixed_throttle_takes_rudder_and_fire_only():
    env = create_env("aircombat", 3, seed=0, opponent="placeholder", throttle=0.0)
    assert env.action_space == Hybrid(continuous=Box((-1.0,), (1.0,)), discrete=(2,))
    env.reset()
    for _ in range(20):
        env.step({"rudder": torch.zeros(3), "fire": torch.zeros(3)})
    assert torch.allclose(env.speed[:, 0], torch.full((3,), P.MIN_SPEED))
    with pytest.raises(ValueError, match=r"shape \[3, 2\]"):
        env.step(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="throttle must be in"):
        create_env("aircombat", 2, throttle=1.5)


def test_outcomes_match_alive_flags_and_dry_episodes_end():
    n = 512
    env = create_env("aircombat", n, seed=2, opponent="rule_based", max_episode_steps=300)
    agent = create_agent("rule_based", num_envs=n)
    seen = {-1.0: 0, 0.0: 0, 1.0: 0}
    for _, _, terminated, truncated, info in _rollout(env, agent, 400):
        combat, final = info["combat"], info["final_obs"]
        mask = combat["mask"]
        expected = final[:, 5] - final[:, 9]  # own alive - enemy alive
        assert torch.equal(combat["outcome"][mask], expected[mask])
        # A copy terminated with both alive must have run dry.
        both_alive = terminated & (final[:, 5] == 1) & (final[:, 9] == 1)
        assert (final[both_alive, 4] == 0).all()
        assert torch.equal(mask, terminated | truncated)
        for value in seen:
            seen[value] += int((combat["outcome"][mask] == value).sum())
    assert all(count > 0 for count in seen.values())


def _obs(dist, bearing_deg, missiles=1.0, enemy_alive=1.0):
    n = len(dist)
    obs = torch.zeros(n, 10)
    obs[:, 3] = obs[:, 8] = 1.0
    obs[:, 4], obs[:, 5], obs[:, 9] = missiles, 1.0, enemy_alive
    obs[:, 6] = torch.tensor(dist) / P.DISTANCE_SCALE
    obs[:, 7] = torch.tensor(bearing_deg) / 180.0
    return obs


def test_crank_agent_state_machine():
    agent = CrankAgent(num_envs=5)
    far, in_range, close = FIRE_RANGE + 5_000.0, FIRE_RANGE - 2_000.0, DEFEND_RANGE - 3_000.0
    obs = _obs([far, in_range, in_range, close, far], [90.0, 10.0, 50.0, 40.0, 0.0])
    inbound = torch.tensor([False, False, False, False, True])
    out = agent.act(obs, inbound=inbound)
    assert agent.mode.tolist() == [APPROACH, FIRE, APPROACH, DEFEND, DEFEND]
    assert out["fire"].tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert (out["throttle"] == 1.0).all()
    assert out["rudder"][0] == 1.0 and out["rudder"][2] == 1.0  # turn toward the enemy
    assert out["rudder"][3] == -1.0  # enemy 40 deg left: turn right to crank it out to 60
    # One missile at a time: right after a launch the agent holds fire, then approaches.
    out = agent.act(obs, inbound=inbound)
    assert out["fire"][1] == 0.0 and agent.mode[1] == APPROACH and agent.hold[1] > 0
    # Defend has hysteresis: between the defend and exit ranges the state is kept.
    between = _obs([DEFEND_RANGE * 1.1] * 5, [0.0] * 5, missiles=0.0)
    agent.act(between)
    assert agent.mode.tolist() == [APPROACH, APPROACH, APPROACH, DEFEND, DEFEND]
    agent.reset(torch.tensor([False, False, False, True, False]))
    assert agent.mode[3] == APPROACH and agent.mode[4] == DEFEND
    agent.act(_obs([DEFEND_RANGE * 1.3] * 5, [0.0] * 5, missiles=0.0))
    assert (agent.mode == APPROACH).all()
    # No missiles left or a dead enemy: never fires.
    agent.reset()
    assert not agent.act(_obs([in_range], [0.0], missiles=0.0))["fire"].any()
    assert not agent.act(_obs([in_range], [0.0], enemy_alive=0.0))["fire"].any()


def test_autoreset_contract():
    n = 64
    env = create_env("aircombat", n, seed=4, opponent="placeholder", max_episode_steps=70)
    agent = create_agent("rule_based", num_envs=n)
    returns = torch.zeros(n)
    lengths = torch.zeros(n, dtype=torch.int64)
    done_any = truncated_any = False
    for obs, reward, terminated, truncated, info in _rollout(env, agent, 200):
        done = info["done"]
        assert torch.equal(done, terminated | truncated)
        returns += reward
        lengths += 1
        ep = info["episode"]
        assert torch.equal(ep["mask"], done)
        torch.testing.assert_close(ep["return"][done], returns[done])
        assert torch.equal(ep["length"][done], lengths[done])
        # Finished copies restart at once; the others report the same obs twice.
        assert (obs[done][:, [4, 5, 9]] == 1.0).all()
        assert torch.equal(info["final_obs"][~done], obs[~done])
        returns[done], lengths[done] = 0.0, 0
        done_any |= bool(terminated.any())
        truncated_any |= bool(truncated.any())
    assert done_any and truncated_any


DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
    ),
]


@pytest.mark.parametrize("device", DEVICES)
def test_compact_and_dense_flight_agree_step_by_step(device):
    # The CPU path flies only the slots in flight; other devices fly every slot. From the
    # same state, a step must give the same result either way (up to float rounding).
    n = 256
    dense, compact = (
        create_env("aircombat", n, device=device, seed=4, opponent="rule_based") for _ in "ab"
    )
    dense._compact, compact._compact = False, True
    p1 = create_agent("random", num_envs=n, device=device, seed=2, fire_prob=0.3)
    obs, _ = dense.reset()
    compact.reset()
    launches = hits = 0
    for _ in range(300):
        compact.load_state_dict(dense.state_dict())
        action = p1.act(obs)
        before = dense.fired.sum()
        out_d, out_c = dense.step(action), compact.step(action)
        launches += int(dense.fired.sum() - before)
        hits += int((out_d[4]["combat"]["mask"] & (out_d[4]["combat"]["outcome"] != 0)).sum())
        assert torch.allclose(out_d[0], out_c[0], atol=1e-5)
        assert torch.equal(out_d[1], out_c[1]) and torch.equal(out_d[2], out_c[2])
        for key in ("alive", "m_active", "m_seen", "stock", "fired"):
            assert torch.equal(getattr(dense, key), getattr(compact, key)), key
        flying = dense.m_active > 0
        for key in ("m_x", "m_y", "m_cx", "m_cy", "m_fuel"):
            assert torch.allclose(getattr(dense, key)[flying], getattr(compact, key)[flying])
        obs = out_d[0]
    assert launches > n and hits > n // 4  # missiles flew and hit


def test_state_dicts_with_bool_flags_still_load():
    # Checkpoints written before the flags became float32 hold them as bool.
    env = create_env("aircombat", 8, seed=1, opponent="random")
    env.reset()
    for _ in range(30):
        env.step(torch.tensor([[0.3, 1.0, 1.0]] * 8))
    state = env.state_dict()
    old = dict(state)
    for key in ("alive", "m_active", "m_seen"):
        old[key] = state[key] > 0
    env2 = create_env("aircombat", 8, seed=1, opponent="random")
    env2.load_state_dict(old)
    assert env2.m_active.dtype == torch.float32
    action = torch.tensor([[-0.2, 1.0, 1.0]] * 8)
    env.load_state_dict(state)
    assert torch.equal(env.step(action)[0], env2.step(action)[0])


def test_seed_reproduces_and_state_dict_round_trip_continues_identically():
    def make():
        env = create_env("aircombat", 32, seed=5, opponent="random")
        return env, create_agent("random", num_envs=32, seed=9, fire_prob=0.2)

    env, agent = make()
    obs, _ = env.reset()
    for _ in range(25):
        obs, *_ = env.step(agent.act(obs))
    saved = (env.state_dict(), agent.state_dict(), obs.clone())
    reference = []
    for _ in range(60):
        obs, reward, terminated, _, info = env.step(agent.act(obs))
        reference.append((obs, reward, terminated, info["combat"]["outcome"]))

    env2, agent2 = make()
    env2.load_state_dict(saved[0])
    agent2.load_state_dict(saved[1])
    obs = saved[2]
    for ref in reference:
        obs, reward, terminated, _, info = env2.step(agent2.act(obs))
        assert torch.equal(obs, ref[0]) and torch.equal(reward, ref[1])
        assert torch.equal(terminated, ref[2]) and torch.equal(info["combat"]["outcome"], ref[3])

    env3, agent3 = make()
    obs3, _ = env3.reset()
    env4, _ = make()
    obs4, _ = env4.reset()
    assert torch.equal(obs3, obs4)


def test_agents_share_one_interface():
    obs = _obs([10_000.0, 30_000.0], [0.0, 45.0])
    for name in ("rule_based", "placeholder", "random"):
        agent = create_agent(name, num_envs=2, device="cpu", seed=0)
        assert agent.train() is agent and agent.training
        assert agent.eval() is agent and not agent.training
        assert agent.to("cpu") is agent
        out = agent.act(obs)
        assert set(out) == {"rudder", "throttle", "fire"}
        assert all(v.shape == (2,) for v in out.values())
        agent.reset(torch.tensor([True, False]))
        agent.reset()
