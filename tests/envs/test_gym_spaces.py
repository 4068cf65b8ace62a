"""The wider gymnasium adapter: flattened observations, MultiDiscrete / MultiBinary actions,
clipped Box actions, async stepping and missing-dependency errors."""

from __future__ import annotations

import math
import multiprocessing

import numpy as np
import pytest
import torch
from helpers import tiny

from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.entry.cli.command import main as cli_main
from ding_lite.envs import Box, Discrete, MultiDiscrete, create_env
from ding_lite.envs.from_config import build_env
from ding_lite.model import MultiCategoricalDist, build_model
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector.serial_collector import SerialCollector

gym = pytest.importorskip("gymnasium", reason="the gym:<id> adapter needs gymnasium")
spaces = gym.spaces

DICT_ID = "DingLiteDictObs-v0"
TEXT_ID = "DingLiteTextObs-v0"
MULTI_DISCRETE_ID = "DingLiteMultiDiscrete-v0"
MULTI_BINARY_ID = "DingLiteMultiBinary-v0"
BOX_ID = "DingLiteBoxAction-v0"

# A 2-D nvec with a ragged part count and non-zero starts: flattened to 4 parts.
MD_NVEC = np.array([[3, 2], [4, 1]])
MD_START = np.array([[0, 1], [-2, 0]])


class DictObsEnv(gym.Env):
    """Nested Dict/Tuple observations of every flattenable kind; episodes of 3 steps."""

    observation_space = spaces.Dict(
        {
            "pos": spaces.Box(-10.0, 10.0, (2,), np.float32),
            "room": spaces.Discrete(3, start=1),
            "more": spaces.Tuple((spaces.MultiBinary(2), spaces.MultiDiscrete([2, 3]))),
        }
    )
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.x = float(self.np_random.integers(0, 5))
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.x += float(action)
        return self._obs(), 1.0, self.t >= 3, False, {}

    def _obs(self):
        t = self.t
        more = (np.array([t % 2, 1], np.int8), np.array([t % 2, t % 3], np.int64))
        return {"pos": np.array([self.x, -t], np.float32), "room": 1 + t % 3, "more": more}


class TextObsEnv(gym.Env):
    """An observation space that does not flatten to a fixed-size vector of numbers."""

    observation_space = spaces.Text(5)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "a", {}

    def step(self, action):
        return "a", 0.0, True, False, {}


class ActionEchoEnv(gym.Env):
    """Observes the action it last received (flattened); reward 1 per part at its lowest
    value; episodes of 4 steps."""

    def __init__(self, action_space):
        self.action_space = action_space
        size = int(np.prod(action_space.shape))
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self._lowest = np.asarray(getattr(action_space, "start", 0)).reshape(-1)
        if isinstance(action_space, spaces.Box):
            self._lowest = action_space.low.reshape(-1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action):
        self.t += 1
        flat = np.asarray(action, np.float32).reshape(-1)
        reward = float((flat == self._lowest).sum())
        return flat, reward, self.t >= 4, False, {}


for env_id, entry_point, kwargs in [
    (DICT_ID, DictObsEnv, {}),
    (TEXT_ID, TextObsEnv, {}),
    (
        MULTI_DISCRETE_ID,
        ActionEchoEnv,
        {"action_space": spaces.MultiDiscrete(MD_NVEC, start=MD_START)},
    ),
    (MULTI_BINARY_ID, ActionEchoEnv, {"action_space": spaces.MultiBinary(3)}),
    (BOX_ID, ActionEchoEnv, {"action_space": spaces.Box(-1.0, 1.0, (2,), np.float32)}),
]:
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=entry_point, kwargs=kwargs, max_episode_steps=50)


# ------------------------------------------------------------------ observations
def test_discrete_observations_are_one_hot():
    env = create_env("gym:FrozenLake-v1", 3, seed=0)
    assert env.obs_shape == (16,) and env.action_space == Discrete(4)
    obs, _ = env.reset()
    assert torch.equal(obs, torch.eye(16)[[0, 0, 0]])  # every copy starts in state 0
    ref = [gym.make("FrozenLake-v1") for _ in range(3)]
    for i, r in enumerate(ref):
        r.reset(seed=i)
    for step in range(30):
        action = np.array([step % 4, (step + 1) % 4, 2])
        obs, _, terminated, truncated, info = env.step(torch.as_tensor(action))
        assert obs.dtype == torch.float32 and (obs.sum(1) == 1).all()
        for i, r in enumerate(ref):
            state, _, term, trunc, _ = r.step(int(action[i]))
            assert info["final_obs"][i].argmax() == state
            if term or trunc:
                state = r.reset()[0]
            assert obs[i].argmax() == state
            assert bool(terminated[i]) == term and bool(truncated[i]) == trunc
    env.close()


def test_dict_and_tuple_observations_flatten_like_gymnasium():
    env = create_env(f"gym:{DICT_ID}", 2, seed=4)
    space = DictObsEnv.observation_space
    # more: 2 (MultiBinary) + 2 + 3 (MultiDiscrete one-hot), pos: 2, room: 3 (one-hot)
    assert env.obs_shape == (12,) == (spaces.flatdim(space),)
    ref = [gym.make(DICT_ID) for _ in range(2)]

    def flat(o):
        return torch.as_tensor(spaces.flatten(space, o), dtype=torch.float32)

    obs, _ = env.reset()
    expected = [r.reset(seed=4 + i)[0] for i, r in enumerate(ref)]
    assert torch.equal(obs, torch.stack([flat(o) for o in expected]))
    ended = 0
    for step in range(7):
        action = [step % 2, 1]
        obs, _, terminated, _, info = env.step(torch.tensor(action))
        for i, r in enumerate(ref):
            o, _, term, _, _ = r.step(action[i])
            assert torch.equal(info["final_obs"][i], flat(o))
            if term:
                o = r.reset()[0]
                ended += 1
            assert torch.equal(obs[i], flat(o))
            assert bool(terminated[i]) == term
    assert ended == 4  # final observations of ended episodes were checked too
    env.close()


def test_unflattenable_observation_space_is_refused():
    with pytest.raises(ValueError, match=r"gym:DingLiteTextObs-v0 has observation space .*Text"):
        create_env(f"gym:{TEXT_ID}", 2)


# ----------------------------------------------------------------------- actions
def test_multi_discrete_actions_reach_gymnasium_shaped_and_shifted():
    env = create_env(f"gym:{MULTI_DISCRETE_ID}", 2, seed=0)
    assert env.action_space == MultiDiscrete((3, 2, 4, 1))
    env.reset()
    action = torch.tensor([[2, 1, 3, 0], [0, 0, 0, 0]])
    obs, reward, *_ = env.step(action)
    # gymnasium got nvec's shape [2, 2], shifted by start [[0, 1], [-2, 0]].
    assert obs.tolist() == [[2.0, 2.0, 1.0, 0.0], [0.0, 1.0, -2.0, 0.0]]
    assert reward.tolist() == [1.0, 4.0]
    with pytest.raises(ValueError, match=r"must have shape \[2, 4\]"):
        env.step(torch.zeros(2, dtype=torch.int64))
    env.close()


def test_multi_binary_actions():
    env = create_env(f"gym:{MULTI_BINARY_ID}", 2, seed=0)
    assert env.action_space == MultiDiscrete((2, 2, 2))
    env.reset()
    obs, reward, *_ = env.step(torch.tensor([[1, 0, 1], [0, 0, 0]]))
    assert obs.tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    assert reward.tolist() == [1.0, 3.0]
    env.close()


def test_model_acts_and_scores_multi_discrete_actions():
    torch.manual_seed(0)
    env = create_env(f"gym:{MULTI_DISCRETE_ID}", 4, seed=0)
    model = build_model(env.obs_shape, env.action_space, hidden_sizes=(16,))
    obs, _ = env.reset()
    action, logp, value = model.act(obs)
    assert action.shape == (4, 4) and action.dtype == torch.int64
    assert logp.shape == value.shape == (4,)
    env.step(action)
    dist = model.get_dist(obs)
    assert isinstance(dist, MultiCategoricalDist)
    new_logp, entropy, _ = model.evaluate_actions(obs, action)
    torch.testing.assert_close(new_logp.detach(), logp)
    # Reference: per part, log-softmax over its own choices only; the parts' terms summed.
    logits = torch.nn.functional.linear(
        model._encode(model.actor_encoder, obs), model.policy_head.weight, model.policy_head.bias
    ).view(4, 4, 4)
    expected = torch.zeros(4)
    for row in range(4):
        for part, n in enumerate((3, 2, 4, 1)):
            part_logp = torch.log_softmax(logits[row, part, :n], -1)
            expected[row] += part_logp[action[row, part]]
    torch.testing.assert_close(new_logp, expected)
    # Near-uniform parts at init (policy head gain 0.01): entropy ~ sum of log n.
    assert entropy.detach().sub(math.log(3 * 2 * 4)).abs().max() < 1e-2
    assert dist.kl(model.get_dist(obs)).abs().max() < 1e-6
    many = model.get_dist(obs.repeat(500, 1)).sample()
    assert (many < torch.tensor([3, 2, 4, 1])).all() and (many >= 0).all()
    assert torch.equal(many.amax(0), torch.tensor([2, 1, 3, 0]))
    (new_logp.mean() + entropy.mean()).backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    env.close()


def test_box_actions_are_clipped_only_on_the_way_to_gymnasium():
    env = create_env(f"gym:{BOX_ID}", 2, seed=0)
    assert env.action_space == Box((-1.0, -1.0), (1.0, 1.0))
    env.reset()
    action = torch.tensor([[5.0, -0.5], [-3.0, 0.25]])
    sent = action.clone()
    obs, *_ = env.step(action)
    assert obs.tolist() == [[1.0, -0.5], [-1.0, 0.25]]
    assert torch.equal(action, sent)
    env.close()


class _CollectMode:
    """The collector's view of a bare model: sampled actions, log-probs and values."""

    def __init__(self, model):
        self.model = model

    def forward(self, obs):
        return self.model.act(obs)

    def get_value(self, obs):
        return self.model.get_value(obs)


def test_collector_stores_the_sampled_unclipped_action_and_its_log_prob():
    torch.manual_seed(0)
    env = create_env(f"gym:{BOX_ID}", 3, seed=0)
    model = build_model(env.obs_shape, env.action_space, log_std_init=1.5)  # std ~4.5
    collector = SerialCollector(env, _CollectMode(model), n_steps=4, gamma=0.99)
    data = collector.collect()
    action, obs = data["action"], data["obs"]
    assert (action.abs() > 1).any()  # sampled far outside the bounds, and stored so
    with torch.no_grad():
        torch.testing.assert_close(data["logp"], model.get_dist(obs).log_prob(action))
    # Each copy observes the action gymnasium received: the stored one, clipped.
    action, obs = action.view(4, 3, 2), obs.view(4, 3, 2)
    torch.testing.assert_close(obs[1:], action[:-1].clamp(-1.0, 1.0))
    env.close()


# ------------------------------------------------------------------- vector mode
@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "CartPole-v1"])
def test_async_steps_the_same_trajectories_as_sync(env_id):
    before = set(multiprocessing.active_children())
    rng = np.random.default_rng(0)
    actions = torch.as_tensor(rng.integers(0, 2, (25, 2)))
    runs = {}
    for mode in ("sync", "async"):
        env = create_env(f"gym:{env_id}", 2, seed=7, vector_mode=mode)
        try:
            assert env.vector_mode == mode
            out = [env.reset()[0]]
            for a in actions:
                obs, reward, terminated, truncated, info = env.step(a)
                out += [obs, reward, terminated, truncated, info["final_obs"]]
        finally:
            env.close()
        runs[mode] = out
    assert all(torch.equal(a, b) for a, b in zip(runs["sync"], runs["async"], strict=True))
    assert set(multiprocessing.active_children()) <= before  # the subprocesses are gone


def test_vector_mode_from_config():
    cfg = compile_config("gym_ppo", ["env.name=gym:CartPole-v1", "env.vector_mode=async"])
    env = build_env(cfg, 2, "cpu", 0)
    try:
        assert env.vector_mode == "async"
        assert env.reset()[0].shape == (2, 4)
    finally:
        env.close()
    with pytest.raises(ConfigError, match=r"'env.vector_mode' must be 'sync' or 'async'"):
        compile_config("cartpole_ppo", ["env.vector_mode=threads"])
    cfg = compile_config("cartpole_ppo", ["env.vector_mode=async"])
    with pytest.raises(ConfigError, match="applies to gym:<id> envs only"):
        build_env(cfg, 2, "cpu", 0)
    with pytest.raises(ValueError, match="unknown vector_mode 'threads'; known: 'sync', 'async'"):
        create_env("gym:CartPole-v1", 2, vector_mode="threads")


# ------------------------------------------------------------- missing dependency
def test_missing_box2d_is_a_one_line_error(capsys, tmp_path, monkeypatch, no_box2d):
    with pytest.raises(ImportError, match=r"^gym:CarRacing-v3 needs Box2D: pip install"):
        create_env("gym:CarRacing-v3", 1)
    monkeypatch.chdir(tmp_path)
    code = cli_main(["serial", "-c", "cartpole_ppo", "env.name=gym:CarRacing-v3"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("ding-lite: error: gym:CarRacing-v3 needs Box2D: ")
    assert err.endswith("pip install Box2D (in a ding_lite checkout: pip install -e '.[box2d]')\n")
    assert not list(tmp_path.iterdir())  # a refused run leaves nothing behind


# ------------------------------------------------------------------- end to end
SMALL = tiny("policy.learn.n_epochs=2")


@pytest.mark.parametrize("env_id", [MULTI_DISCRETE_ID, DICT_ID])
def test_serial_pipeline_trains_on_wider_spaces(tmp_path, env_id):
    policy = serial_pipeline(
        "gym_ppo",
        seed=0,
        overrides=[f"env.name=gym:{env_id}", *SMALL],
        exp_dir=str(tmp_path / "run"),
        max_train_iter=2,
    )
    assert policy.result["train_iter"] == 2 and policy.result["envstep"] == 2 * 4 * 16
    assert policy.result["stop_reason"] == "max_train_iter"
    assert all(torch.isfinite(p).all() for p in policy.model.parameters())
