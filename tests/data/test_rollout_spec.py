"""Rollout specs: derived from a probe env, matching what a collector writes, and every way
a file can differ from them."""

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import InvalidRolloutError, probe_rollout_spec, rollout_spec, validate_rollout
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.utils.errors import DingLiteError
from ding_lite.worker.collector import SerialCollector

CARTPOLE = rollout_spec((4,), (), torch.int64)


def content(n=8, version=3, **changes):
    data = {
        "obs": torch.randn(n, 4),
        "action": torch.randint(0, 2, (n,)),
        "logp": torch.randn(n),
        "value": torch.randn(n),
        "reward": torch.randn(n),
        "next_value": torch.randn(n),
        "terminated": torch.rand(n) < 0.1,
        "done": torch.rand(n) < 0.2,
    }
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return {"format": "ding_lite.rollout.v1", "policy_version": version, "data": data}


@pytest.mark.parametrize("experiment", ["cartpole_ppo", "pendulum_ppo", "aircombat_ppo"])
def test_the_probed_spec_is_what_a_collector_writes(experiment):
    cfg = compile_config(experiment, ["env.num_envs=3", "policy.collect.n_steps=5"])
    probe = build_env(cfg, 1, "cpu", 0)
    policy = create_policy(
        cfg.policy, obs_shape=probe.obs_shape, action_space=probe.action_space, device="cpu"
    )
    rng = torch.get_rng_state()
    spec = probe_rollout_spec(probe, policy.collect_mode, n_steps=5)
    assert torch.equal(torch.get_rng_state(), rng)  # probing changes no run
    assert spec.n_steps == 5
    env = build_env(cfg, 3, "cpu", 1)
    collector = SerialCollector(env, policy.collect_mode, n_steps=5, gamma=0.99)
    rollout = {"policy_version": 0, "data": collector.collect()}
    validate_rollout(rollout, spec, 15, path="x.pt", expected_version=0)
    assert {*spec.fields, *spec.stats} == set(rollout["data"])


def test_a_valid_rollout_passes():
    validate_rollout(content(), CARTPOLE, 8, path="a.pt", expected_version=3)
    validate_rollout(content(), CARTPOLE, 8)  # the version is checked only when asked


@pytest.mark.parametrize(
    "changes,size,problem",
    [
        ({"reward": None}, 8, "missing key 'reward'"),
        ({"done": None}, 8, "missing key 'done'"),
        ({"adv": torch.zeros(8)}, 8, "unexpected key 'adv'"),
        ({"obs": torch.randn(8, 5)}, 8, r"'obs' has shape \(8, 5\), expected \(samples, 4\)"),
        ({"obs": torch.randn(8)}, 8, "'obs' has shape"),
        ({"action": torch.zeros(8, 1, dtype=torch.long)}, 8, r"expected \(samples\)"),
        ({"obs": torch.randn(8, 4, dtype=torch.float64)}, 8, "'obs' has dtype torch.float64"),
        ({"action": torch.zeros(8)}, 8, "'action' has dtype torch.float32, expected torch.int64"),
        ({"value": torch.zeros(7)}, 8, "inconsistent lengths: 'obs' has 8 samples, 'value' 7"),
        ({}, 16, "holds 8 samples, its name says 16"),
        ({"reward": torch.tensor([0.0] * 7 + [float("nan")])}, 8, "'reward' holds non-finite"),
        ({"next_value": torch.full((8,), float("-inf"))}, 8, "'next_value' holds non-finite"),
        (
            {"terminated": torch.zeros(8)},
            8,
            "'terminated' has dtype torch.float32, expected torch.bool",
        ),
        ({"obs": torch.full((8, 4), float("inf"))}, 8, "'obs' holds non-finite"),
        ({"logp": [0.0] * 8}, 8, "'logp' is not a dense tensor"),
        ({"logp": torch.zeros(8).to_sparse()}, 8, "'logp' is not a dense tensor"),
    ],
)
def test_every_mismatch_is_named_in_one_line(changes, size, problem):
    with pytest.raises(InvalidRolloutError, match=problem) as info:
        validate_rollout(content(**changes), CARTPOLE, size, path="data/c0/f.pt")
    message = str(info.value)
    assert message.startswith("invalid rollout data/c0/f.pt: ") and "\n" not in message
    assert isinstance(info.value, DingLiteError)


def test_the_version_must_match_the_name():
    with pytest.raises(InvalidRolloutError, match="holds policy version 3, its name says 4"):
        validate_rollout(content(), CARTPOLE, 8, expected_version=4)
    with pytest.raises(InvalidRolloutError, match="policy_version is str"):
        validate_rollout(content(version="3"), CARTPOLE, 8, expected_version=3)


def test_data_that_is_no_dict_is_invalid():
    with pytest.raises(InvalidRolloutError, match="not a dict of tensors"):
        validate_rollout({"data": [1, 2]}, CARTPOLE, 2)


def test_a_file_of_partial_env_copies_is_refused():
    """A rollout is n_steps steps of every env copy: a sample count that is no multiple of
    n_steps cannot be one, even when its name states it."""
    spec = rollout_spec((4,), (), torch.int64, n_steps=4)
    validate_rollout(content(n=8), spec, 8)
    with pytest.raises(
        InvalidRolloutError, match="holds 6 samples, not 4 steps of whole env copies"
    ):
        validate_rollout(content(n=6), spec, 6, path="data/c0/f.pt")


@pytest.mark.parametrize("key", ["episode", "group", "stream", "step"])
def test_episode_numbers_and_groups_must_be_small_and_non_negative(key):
    """An episode-level estimator's fields: int64 per sample, values in [0, 2**31 - 1]."""
    spec = rollout_spec((4,), (), torch.int64, episodes=True)
    assert spec.fields[key].dtype == torch.int64
    index = {
        "episode": torch.arange(8) // 3,
        "group": torch.zeros(8, dtype=torch.long),
        "stream": torch.full((8,), 7),
        "step": torch.arange(8),
    }
    validate_rollout(content(**index), spec, 8)
    with pytest.raises(InvalidRolloutError, match=f"missing key '{key}'"):
        validate_rollout(content(**{k: v for k, v in index.items() if k != key}), spec, 8)
    negative = index[key].clone()
    negative[5] = -1
    with pytest.raises(InvalidRolloutError, match=f"'{key}' holds values outside"):
        validate_rollout(content(**{**index, key: negative}), spec, 8)
    huge = index[key].clone()
    huge[0] = 2**31
    with pytest.raises(InvalidRolloutError, match=f"'{key}' holds values outside"):
        validate_rollout(content(**{**index, key: huge}), spec, 8)


def test_a_rollout_holds_one_stream():
    spec = rollout_spec((4,), (), torch.int64, episodes=True)
    index = {
        "episode": torch.zeros(8, dtype=torch.long),
        "group": torch.zeros(8, dtype=torch.long),
        "stream": torch.tensor([7] * 7 + [8]),
        "step": torch.arange(8),
    }
    with pytest.raises(InvalidRolloutError, match="'stream' holds more than one value"):
        validate_rollout(content(**index), spec, 8)
