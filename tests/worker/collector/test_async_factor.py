"""collector.async_factor: K groups of env copies, each acted for and stepped in turn.

With a deterministic policy, K = 2 must collect exactly what K = 1 does on a gymnasium env
(whose copy i is seeded seed + i either way). Bundled torch envs draw from one generator
per env, so there K = 2 equals two K = 1 collectors of N / 2 copies side by side.
"""

import multiprocessing
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.buffered import BufferedEnv
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.policy.base import Acting, CollectMode
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector import SerialCollector

GYM_CARTPOLE = ["env.name=gym:CartPole-v1", "env.num_envs=4", "policy.collect.n_steps=48"]


class ScriptedCollect:
    """A deterministic collect mode computed row by row with elementwise ops, so its outputs
    for a row do not depend on the other rows of the batch (bitwise)."""

    def __init__(self, n_actions: int) -> None:
        self.n_actions = n_actions

    def _outputs(self, obs: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, ...]:
        score = (obs.abs() * 10.0).sum(-1) + memory
        action = score.floor().long() % self.n_actions
        return action, -obs.square().sum(-1), obs.sum(-1) * 0.1 + memory

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self._outputs(obs, torch.zeros(obs.shape[0]))

    def get_value(self, obs, state=None, episode_start=None) -> torch.Tensor:
        return self._outputs(obs, torch.zeros(obs.shape[0]) if state is None else state[:, 0])[2]


class ScriptedRecurrent(ScriptedCollect):
    """ScriptedCollect with a one-number memory per row: a decayed sum of observations."""

    recurrent = True

    def initial_state(self, batch: int, device: Any = None) -> torch.Tensor:
        return torch.zeros(batch, 1, device=device)

    def step(self, obs, state, episode_start):
        state = torch.where(episode_start.unsqueeze(1), 0.0, state)
        state = state * 0.5 + obs.sum(-1, keepdim=True)
        return (*self._outputs(obs, state[:, 0]), state)


def mode_collect(ppo) -> CollectMode:
    """The PPO policy's collect mode acting with its distribution's mode (deterministic)."""
    model, sampling = ppo.model, ppo.collect_mode
    return CollectMode(
        Acting(
            act=lambda obs: model.act(obs, deterministic=True),
            step=lambda obs, state, starts: model.step(obs, state, starts, deterministic=True),
            initial_state=sampling.initial_state,
            load_model=sampling.load_state_dict,
            recurrent=sampling.recurrent,
            get_value=sampling.get_value,
            obs_rms=sampling.obs_rms,
            ret_rms=sampling.ret_rms,
        )
    )


@dataclass
class PolicyStub:
    """What ``SerialCollector.from_config`` reads from a Policy."""

    collect_mode: Any
    adv_estimator: Any


def make(name, overrides, k, policy="scripted", seed=3, num_envs=None):
    """A collector of ``name`` + ``overrides`` with async_factor ``k``, through from_config."""
    extra = [f"collector.async_factor={k}"]
    if num_envs is not None:
        extra.append(f"env.num_envs={num_envs}")
    cfg = compile_config(name, [*overrides, *extra], seed=seed)
    env = build_env(cfg, cfg.env.num_envs, "cpu", seed)
    torch.manual_seed(0)  # the same PPO weights every time
    ppo = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    n = env.action_space.n
    modes = {
        "scripted": ScriptedCollect(n),
        "scripted_recurrent": ScriptedRecurrent(n),
        "mode": mode_collect(ppo),
        "sample": ppo.collect_mode,
    }
    collector = SerialCollector.from_config(
        env, PolicyStub(modes[policy], ppo.adv_estimator), cfg, seed
    )
    return collector, ppo


def rollouts(collector, n=3):
    try:
        return [collector.collect() for _ in range(n)]
    finally:
        collector.close()


def assert_same(first, second, exact=None):
    assert first.keys() == second.keys()
    for key in first:
        if exact is None or key in exact:
            assert torch.equal(first[key], second[key]), key
        else:
            torch.testing.assert_close(first[key], second[key], rtol=1e-5, atol=1e-5)


def assert_same_counts(a, b):
    assert (a.envstep, a.episodes) == (b.envstep, b.episodes)
    assert list(a.recent_returns) == list(b.recent_returns)
    assert list(a.recent_lengths) == list(b.recent_lengths)


# ------------------------------------------------------------------ K=2 equals K=1
@pytest.mark.parametrize("vector_mode", ["sync", "async"])
@pytest.mark.parametrize("policy", ["scripted", "scripted_recurrent"])
def test_k2_collects_the_same_data_as_k1_on_gymnasium(vector_mode, policy):
    overrides = [*GYM_CARTPOLE, f"env.vector_mode={vector_mode}"]
    one, _ = make("gym_ppo", overrides, 1, policy)
    two, _ = make("gym_ppo", overrides, 2, policy)
    assert two.async_factor == 2 and [g.num_envs for g in two.env.groups] == [2, 2]
    assert all(g.vector_mode == vector_mode for g in two.env.groups)
    for a, b in zip(rollouts(one), rollouts(two), strict=True):
        assert_same(a, b, exact=a.keys())
    assert one.episodes > 0
    assert_same_counts(one, two)


@pytest.mark.parametrize("core", ["none", "lstm"])
def test_k2_with_the_ppo_mode_action_acts_the_same_on_gymnasium(core):
    """A real network: the env data and actions are identical; its float outputs may differ
    in the last bits, as a matrix product over 2 rows need not round as over 4."""
    overrides = [*GYM_CARTPOLE, f"policy.model.core={core}", "policy.model.core_size=16"]
    overrides += ["policy.learn.bptt_horizon=8", "policy.learn.batch_size=64"]
    one, _ = make("gym_ppo", overrides, 1, "mode")
    two, _ = make("gym_ppo", overrides, 2, "mode")
    for a, b in zip(rollouts(one), rollouts(two), strict=True):
        assert_same(a, b, exact={"obs", "action", "episode_start"})
    assert_same_counts(one, two)


def test_k2_on_a_torch_env_equals_two_k1_collectors_side_by_side():
    """Each group has its own generator, seeded seed + g * N / K: group g is a K = 1
    collector of N / K copies with that seed."""
    overrides = ["policy.collect.n_steps=40"]
    two, _ = make("cartpole_ppo", overrides, 2, num_envs=4)
    left, _ = make("cartpole_ppo", overrides, 1, num_envs=2)
    right, _ = make("cartpole_ppo", overrides, 1, num_envs=2, seed=5)
    for both, a, b in zip(rollouts(two), rollouts(left), rollouts(right), strict=True):
        for key in both:
            halves = [x.view(40, 2, *x.shape[1:]) for x in (a[key], b[key])]
            assert torch.equal(both[key], torch.cat(halves, 1).flatten(0, 1)), key
    assert two.envstep == left.envstep + right.envstep
    assert two.episodes == left.episodes + right.episodes > 0


@pytest.mark.parametrize("policy", ["scripted", "scripted_recurrent"])
def test_k2_with_agents_collects_the_same_data_as_k1(policy):
    """two_agent_meet draws no random numbers: K = 2 equals K = 1 (rows N * A, copy-major)."""
    overrides = ["env.name=two_agent_meet", "policy.collect.n_steps=16"]
    one, _ = make("cartpole_ppo", overrides, 1, policy, num_envs=4)
    two, _ = make("cartpole_ppo", overrides, 2, policy, num_envs=4)
    for a, b in zip(rollouts(one), rollouts(two), strict=True):
        assert a["obs"].shape == (16 * 4 * 2, 2)
        assert_same(a, b, exact=a.keys())
    assert one.episodes > 0
    assert_same_counts(one, two)


# ---------------------------------------------------------------------------- resume
@pytest.mark.parametrize("name", ["cartpole_ppo", "cartpole_lstm_ppo"])
def test_resume_with_k2_continues_exactly(name):
    overrides = ["policy.collect.n_steps=32"]
    a, ppo_a = make(name, overrides, 2, "sample", num_envs=4)
    a.collect()
    state = a.state_dict()
    rng = torch.get_rng_state()
    first = a.collect()
    b, ppo_b = make(name, overrides, 2, "sample", seed=11, num_envs=4)
    ppo_b.load_state_dict(ppo_a.state_dict())
    b.load_state_dict(state)
    torch.set_rng_state(rng)
    assert_same(first, b.collect(), exact=first.keys())
    assert_same_counts(a, b)


def test_resume_refuses_a_state_of_another_async_factor():
    two, _ = make("cartpole_ppo", [], 2, num_envs=4)
    one, _ = make("cartpole_ppo", [], 1, num_envs=4)
    with pytest.raises(ValueError, match="async_factor=2, this collector has 1"):
        one.load_state_dict(two.state_dict())
    with pytest.raises(ValueError, match="async_factor=1, this collector has 2"):
        two.load_state_dict(one.state_dict())


# ---------------------------------------------------------------------------- config
def test_num_envs_must_divide_by_async_factor():
    with pytest.raises(ConfigError) as err:
        compile_config("cartpole_ppo", ["env.num_envs=6", "collector.async_factor=4"])
    message = str(err.value)
    assert "env.num_envs=6" in message and "collector.async_factor=4" in message
    assert "\n" not in message
    with pytest.raises(ConfigError, match="collector.async_factor"):
        compile_config("cartpole_ppo", ["collector.async_factor=0"])


def test_from_config_checks_the_env_it_is_given():
    cfg = compile_config("cartpole_ppo", ["collector.async_factor=2"])
    env = create_env("cartpole", 3, seed=0)
    with pytest.raises(ConfigError, match="env.num_envs=3 is not a multiple of"):
        SerialCollector.from_config(env, PolicyStub(ScriptedCollect(2), None), cfg, 0)


# ----------------------------------------------------------------- env side, cleanup
def test_subprocesses_are_closed():
    before = set(multiprocessing.active_children())
    collector, _ = make("gym_ppo", [*GYM_CARTPOLE, "env.vector_mode=async"], 2)
    # the env handed to from_config was closed: only the groups' 2 + 2 subprocesses run
    assert len(set(multiprocessing.active_children()) - before) == 4
    rollouts(collector, n=1)
    assert set(multiprocessing.active_children()) <= before


@pytest.mark.parametrize(
    ("name", "vector_mode"),
    [("cartpole", "sync"), ("gym:CartPole-v1", "sync"), ("gym:CartPole-v1", "async")],
)
def test_step_async_then_wait_equals_step(name, vector_mode):
    envs = [create_env(name, 3, seed=1, vector_mode=vector_mode) for _ in range(2)]
    try:
        for env in envs:
            env.reset()
        for t in range(30):
            action = torch.tensor([t % 2, 1, 0])
            expected = envs[0].step(action)
            envs[1].step_async(action)
            got = envs[1].step_wait()
            for x, y in zip(expected[:4], got[:4], strict=True):
                assert torch.equal(x, y)
            assert torch.equal(expected[4]["final_obs"], got[4]["final_obs"])
    finally:
        for env in envs:
            env.close()


def test_the_default_async_step_refuses_misuse():
    env = create_env("cartpole", 2, seed=0)
    env.reset()
    with pytest.raises(RuntimeError, match="no step is pending"):
        env.step_wait()
    env.step_async(torch.zeros(2, dtype=torch.long))
    with pytest.raises(RuntimeError, match="a step is pending"):
        env.step_async(torch.zeros(2, dtype=torch.long))
    env.step_wait()


def test_buffered_env_refuses_groups_that_differ():
    with pytest.raises(ValueError, match="group 1 .* differs from group 0"):
        BufferedEnv([create_env("cartpole", 2), create_env("pendulum", 2)])
    buffered = BufferedEnv([create_env("cartpole", 2), create_env("cartpole", 3)])
    assert buffered.num_envs == 5 and buffered.offsets == [0, 2]
    assert BufferedEnv.row_slices(buffered.groups, 2) == [slice(0, 4), slice(4, 10)]
