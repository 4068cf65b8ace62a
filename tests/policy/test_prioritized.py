"""Prioritized segments (policy.learn.prio_alpha, prio_beta0): probabilities, importance
weights, beta annealing, the uniform path kept bit for bit, and every rank drawing alike.

Run as a script (``python test_prioritized.py OUT``) it is one rank of the data-parallel
test below: with RANK/WORLD_SIZE/MASTER_* it joins a gloo group, without them it is the
single-process reference.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.policy.ppo.batches import SegmentSampler, minibatches
from ding_lite.rl_utils import is_weights, normalize_advantages, prio_beta, segment_probs
from ding_lite.utils import distributed
from ding_lite.utils.errors import ConfigError

# Four segments of two steps; sum of |adv| per segment: 1, 1, 2, 4.
ADV = torch.tensor([0.5, -0.5, 1.0, 0.0, -1.5, 0.5, 3.0, -1.0])


def test_probabilities_and_weights_by_hand():
    probs = segment_probs(ADV, horizon=2, alpha=1.0)
    torch.testing.assert_close(probs, torch.tensor([1 / 8, 1 / 8, 2 / 8, 4 / 8]))
    # alpha = 2: 1, 1, 4, 16 over 22.
    torch.testing.assert_close(
        segment_probs(ADV, horizon=2, alpha=2.0), torch.tensor([1.0, 1.0, 4.0, 16.0]) / 22
    )
    # S * p = 0.5, 0.5, 1, 2.
    idx = torch.tensor([3, 0, 2, 3])
    torch.testing.assert_close(is_weights(probs, idx, beta=1.0), torch.tensor([0.5, 2.0, 1.0, 0.5]))
    half = is_weights(probs, idx, beta=0.5)
    r2 = math.sqrt(2.0)
    torch.testing.assert_close(half, torch.tensor([1 / r2, r2, 1.0, 1 / r2]))
    # Not normalized by the largest weight: weights above 1 stay above 1.
    assert half.max() > 1.0
    # beta = 0: no correction.
    assert torch.equal(is_weights(probs, idx, beta=0.0), torch.ones(4))


def test_probabilities_edge_cases():
    # alpha = 0: uniform, whatever the advantages.
    assert torch.equal(segment_probs(ADV, horizon=2, alpha=0.0), torch.full((4,), 0.25))
    # A segment without advantage is never drawn; all without: uniform.
    adv = torch.tensor([0.0, 0.0, 1.0, -1.0])
    torch.testing.assert_close(segment_probs(adv, horizon=2, alpha=0.5), torch.tensor([0.0, 1.0]))
    assert torch.equal(segment_probs(torch.zeros(6), horizon=3, alpha=1.0), torch.full((2,), 0.5))
    # horizon 1: every row is a segment.
    torch.testing.assert_close(
        segment_probs(torch.tensor([1.0, -3.0]), horizon=1, alpha=1.0), torch.tensor([0.25, 0.75])
    )


def test_beta_annealing():
    assert prio_beta(0.6, 1.0, 0.0) == 0.6
    assert prio_beta(0.6, 1.0, 0.5) == pytest.approx(0.8)
    assert prio_beta(0.6, 1.0, 1.0) == pytest.approx(1.0)
    assert prio_beta(0.6, 0.5, 1.0) == pytest.approx(0.8)  # the formula ends below 1
    assert prio_beta(0.6, 0.0, 1.0) == 0.6
    assert prio_beta(0.6, 2.0, 1.0) == 1.0  # clamped: alpha > 1 would pass 1
    assert prio_beta(0.2, 1.0, 1.5) == pytest.approx(1.0)  # progress clamped to 1
    # The sampler takes it as is.
    sampler = SegmentSampler(
        ADV, 2, 4, 1, alpha=1.0, beta0=0.4, progress=0.25, device=torch.device("cpu")
    )
    assert sampler.beta == pytest.approx(0.55)


def test_weights_scale_the_normalized_advantages_per_segment():
    n = 8
    g = torch.Generator().manual_seed(0)
    data = {
        "obs": torch.randn(n, 3, generator=g),
        "action": torch.randint(0, 2, (n,), generator=g),
        "logp": torch.randn(n, generator=g),
        "value": torch.randn(n, generator=g),
        "ret": torch.randn(n, generator=g),
        "adv": ADV.clone(),
    }
    order = torch.tensor([3, 3, 0, 2])  # drawn with replacement
    weights = torch.tensor([0.5, 0.5, 2.0, 1.0])
    mbs = list(minibatches(data, order, 4, normalize=True, horizon=2, weights=weights))
    assert len(mbs) == 2
    rows = torch.tensor([6, 7, 6, 7, 0, 1, 4, 5])
    for i, mb in enumerate(mbs):
        mb_rows = rows[i * 4 : (i + 1) * 4]
        want = normalize_advantages(ADV[mb_rows]) * weights[i * 2 : (i + 1) * 2].repeat_interleave(
            2
        )
        torch.testing.assert_close(mb.adv, want)
        assert torch.equal(mb.obs, data["obs"][mb_rows])


def _sampler(adv, horizon, mb_size, alpha, beta0=0.6, progress=0.0, ranks=1):
    return SegmentSampler(
        adv,
        horizon,
        mb_size,
        ranks,
        alpha=alpha,
        beta0=beta0,
        progress=progress,
        device=torch.device("cpu"),
    )


def test_sampler_draws_high_advantage_segments_more_often():
    adv = torch.tensor([0.1, 0.2, 0.5, 1.0, 2.0, 4.0])  # horizon 1: six segments
    sampler = _sampler(adv, 1, 2, alpha=1.0)
    torch.testing.assert_close(sampler.probs, adv / adv.sum())
    torch.manual_seed(0)
    counts = torch.zeros(6)
    for _ in range(2000):
        order, weights = sampler.epoch()
        assert order.shape == (6,)  # 3 minibatches of 2, as a shuffled epoch
        torch.testing.assert_close(weights, (6 * sampler.probs[order]) ** -0.6)
        counts += torch.bincount(order, minlength=6)
    freq = counts / counts.sum()
    # 12000 draws: each frequency within 0.015 of its probability (> 5 standard errors).
    torch.testing.assert_close(freq, sampler.probs, atol=0.015, rtol=0)
    assert (freq.diff() > 0).all()  # more |adv|, drawn more often
    assert freq[-1] > 8 * freq[1]
    # The logged mean covers every draw.
    mean = sampler.info()["prio_is_weight_mean"]
    want = (counts * (6 * sampler.probs) ** -0.6).sum() / counts.sum()
    assert mean == pytest.approx(want.item(), rel=1e-5)


def test_sampler_keeps_whole_minibatches_of_segments():
    sampler = _sampler(ADV, 2, 4, alpha=1.0)  # 4 segments of 2, 2 segments per minibatch
    order, _ = sampler.epoch()
    assert order.shape == (4,)
    sampler = _sampler(torch.ones(10), 2, 4, alpha=1.0)  # 5 segments: 2 minibatches
    assert sampler.epoch()[0].shape == (4,)
    with pytest.raises(ConfigError, match="not whole segments of policy.learn.bptt_horizon=3"):
        _sampler(ADV, 3, 6, alpha=1.0)
    with pytest.raises(ConfigError, match="does not split into 3 equal parts"):
        _sampler(ADV, 2, 4, alpha=0.0, ranks=3)


def test_uniform_sampler_is_todays_randperm():
    sampler = _sampler(torch.randn(20), 2, 6, alpha=0.0)
    assert sampler.probs is None
    torch.manual_seed(5)
    order, weights = sampler.epoch()
    after = torch.get_rng_state()
    torch.manual_seed(5)
    assert torch.equal(order, torch.randperm(10)) and weights is None
    assert torch.equal(after, torch.get_rng_state())
    assert sampler.info() == {}


def _cfg(overrides=()):
    return compile_config(
        "cartpole_ppo",
        ["policy.model.hidden_sizes=[16]", "policy.learn.batch_size=64", "policy.learn.n_epochs=3"]
        + list(overrides),
    )


def _batch(n=192, seed=1):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, 4, generator=g)
    adv = torch.randn(n, generator=g) * 3 + 1
    value = torch.randn(n, generator=g)
    return {
        "obs": obs,
        "action": torch.randint(0, 2, (n,), generator=g),
        "logp": torch.full((n,), math.log(0.5)),
        "value": value,
        "adv": adv,
        "ret": value + adv,
    }


def _trained(cfg, iters=2, total_iters=None):
    torch.manual_seed(0)
    policy = PPOPolicy(
        cfg.policy, obs_shape=(4,), action_space=Discrete(2), total_iters=total_iters
    )
    data = _batch()
    torch.manual_seed(2)
    infos = [policy.learn_mode.forward(data) for _ in range(iters)]
    params = torch.cat([p.detach().flatten() for p in policy.model.parameters()])
    return params, infos, torch.get_rng_state()


def test_prio_alpha_zero_is_the_uniform_update_bit_for_bit():
    default = _cfg()
    explicit = _cfg(["policy.learn.prio_alpha=0", "policy.learn.prio_beta0=0.3"])
    assert default.policy.learn.prio_alpha == 0.0 and explicit.policy.learn.prio_alpha == 0.0
    p_default, i_default, rng_default = _trained(default)
    p_explicit, i_explicit, rng_explicit = _trained(explicit)
    assert torch.equal(p_default, p_explicit)
    assert i_default == i_explicit
    assert "prio_is_weight_mean" not in i_default[0]
    # The RNG stream: the update draws exactly one randperm per epoch, nothing more.
    assert torch.equal(rng_default, rng_explicit)
    torch.manual_seed(2)
    for _ in range(2 * 3):  # iterations x epochs
        torch.randperm(192)
    assert torch.equal(rng_default, torch.get_rng_state())


@pytest.mark.parametrize("total_iters", [4, None])
def test_prioritized_update_draws_by_priority_and_logs_the_mean_weight(total_iters):
    cfg = _cfg(["policy.learn.prio_alpha=0.8", "policy.learn.prio_beta0=0.5"])
    params, infos, _ = _trained(cfg, iters=3, total_iters=total_iters)
    uniform_params, uniform_infos, _ = _trained(_cfg(), iters=3)
    assert not torch.equal(params, uniform_params)
    assert [i["minibatches"] for i in infos] == [i["minibatches"] for i in uniform_infos]
    assert infos[0]["minibatches"] == 9  # 3 epochs of 192 / 64
    # Replay the draws: iteration k uses beta = 0.5 + 0.5 * 0.8 * k / 4 (progress k / 4),
    # or 0.5 throughout when the run has no planned length.
    probs = segment_probs(_batch()["adv"], horizon=1, alpha=0.8)
    torch.manual_seed(2)
    for k, info in enumerate(infos):
        beta = 0.5 + 0.5 * 0.8 * k / 4 if total_iters else 0.5
        drawn = torch.cat([torch.multinomial(probs, 192, replacement=True) for _ in range(3)])
        want = is_weights(probs, drawn, beta).mean().item()
        assert info["prio_is_weight_mean"] == pytest.approx(want, rel=1e-6)
    assert infos[0]["prio_is_weight_mean"] != 1.0


def test_prioritized_recurrent_segments():
    cfg = _cfg(
        [
            "policy.model.core=gru",
            "policy.model.core_size=8",
            "policy.learn.bptt_horizon=8",
            "policy.learn.prio_alpha=1.0",
        ]
    )
    torch.manual_seed(0)
    policy = PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
    data = _batch()
    data["episode_start"] = torch.zeros(192, dtype=torch.bool)
    data["core_state"] = policy.initial_state(192 // 8)
    info = policy.learn_mode.forward(data)
    assert info["minibatches"] == 3 * (192 // 64)
    assert math.isfinite(info["prio_is_weight_mean"]) and info["prio_is_weight_mean"] > 0
    # DI-engine's priority info: each segment's index in the batch and its probability.
    probs = segment_probs(data["adv"], horizon=8, alpha=1.0)
    assert info["priority_info"]["replay_buffer_idx"] == list(range(192 // 8))
    assert info["priority_info"]["priority"] == pytest.approx(probs.tolist())


def test_the_learner_hands_the_priorities_to_its_priority_info(tmp_path):
    from ding_lite.worker.learner import BaseLearner

    torch.manual_seed(0)
    cfg = _cfg(["policy.learn.prio_alpha=0.8"])
    policy = PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
    learner = BaseLearner({}, policy, exp_dir=tmp_path)
    assert learner.priority_info is None
    info = learner.train(_batch())
    assert "priority_info" not in info and all(isinstance(v, float) for v in info.values())
    want = segment_probs(_batch()["adv"], horizon=1, alpha=0.8).tolist()
    assert learner.priority_info == {"replay_buffer_idx": list(range(192)), "priority": want}
    plain = PPOPolicy(_cfg().policy, obs_shape=(4,), action_space=Discrete(2))
    uniform = BaseLearner({}, plain, exp_dir=tmp_path)
    uniform.train(_batch())
    assert uniform.priority_info is None


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("policy.learn.prio_alpha=-0.5", "'policy.learn.prio_alpha' must be 0 or more, got -0.5"),
        ("policy.learn.prio_beta0=1.5", "'policy.learn.prio_beta0' must be in [0, 1], got 1.5"),
        ("policy.learn.prio_beta0=-0.1", "'policy.learn.prio_beta0' must be in [0, 1], got -0.1"),
    ],
)
def test_out_of_range_keys_are_one_line_errors(override, message):
    with pytest.raises(ConfigError) as err:
        compile_config("cartpole_ppo", [override])
    assert message in str(err.value) and "\n" not in str(err.value)


def _run_rank(out: Path, env: dict) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        if env.get(name) is None:
            env.pop(name, None)
    return subprocess.Popen([sys.executable, __file__, str(out)], env=env)


@pytest.mark.slow
def test_every_rank_draws_rank_zeros_segments(tmp_path):
    """Two gloo ranks, seeded differently, train like one process seeded as rank 0."""
    from helpers import exit_codes  # here: this file also runs as a rank's script

    port = str(distributed.free_port())
    group = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    procs = [
        _run_rank(tmp_path / "single.pt", {"RANK": None, "WORLD_SIZE": None}),
        _run_rank(tmp_path / "rank0.pt", {**group, "RANK": "0", "LOCAL_RANK": "0"}),
        _run_rank(tmp_path / "rank1.pt", {**group, "RANK": "1", "LOCAL_RANK": "1"}),
    ]
    assert exit_codes(procs, 120) == [0, 0, 0]
    single, rank0, rank1 = (
        torch.load(tmp_path / f"{n}.pt", weights_only=True) for n in ("single", "rank0", "rank1")
    )
    for got in (rank0, rank1):
        assert torch.equal(got["weight_mean"], single["weight_mean"])  # the same draws
        torch.testing.assert_close(got["params"], single["params"], rtol=1e-5, atol=1e-5)
    assert torch.equal(rank0["params"], rank1["params"])


def _rank_main(out: str) -> None:
    torch.set_num_threads(1)
    if distributed.env_world_size() > 1:
        distributed.init_from_env(timeout_s=60)
    rank, _ = distributed.world()
    cfg = _cfg(["policy.learn.prio_alpha=1.0"])
    torch.manual_seed(0)
    policy = PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2), total_iters=4)
    data = _batch()
    torch.manual_seed(2 + rank)  # a follower's own draws would differ: rank 0's replace them
    infos = [policy.learn_mode.forward(data) for _ in range(2)]
    params = torch.cat([p.detach().flatten() for p in policy.model.parameters()])
    weight_mean = torch.tensor([i["prio_is_weight_mean"] for i in infos], dtype=torch.float64)
    torch.save({"params": params, "weight_mean": weight_mean}, out)
    if distributed.env_world_size() > 1:
        # Both ranks are done before either tears the group down: a rank that leaves while
        # the other still talks to it can abort in gloo's teardown (SIGABRT, seen once).
        torch.distributed.barrier()
    distributed.finalize()


if __name__ == "__main__":
    _rank_main(sys.argv[1])
