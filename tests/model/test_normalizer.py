"""Running statistics: merging summaries of parts gives the statistics of the whole."""

import pytest
import torch

from ding_lite.envs.spaces import Discrete
from ding_lite.model import build_model
from ding_lite.model.normalizer import NORM_EPS, RunningNorm, summarize


def test_merged_summaries_match_one_pass_mean_and_variance():
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(1000, 3, generator=gen) * torch.tensor([1.0, 50.0, 1e-3]) + 1e3
    rms = RunningNorm((3,))
    # Uneven parts, merged one at a time and as stacked rows (several rollouts of a batch).
    rms.merge(summarize(data[:7], (3,)))
    rms.merge(torch.stack([summarize(data[7:400], (3,)), summarize(data[400:401], (3,))]))
    rms.merge(summarize(data[401:], (3,)))
    reference = data.to(torch.float64)
    assert rms.count == 1000
    assert torch.allclose(rms.mean, reference.mean(0), rtol=1e-12, atol=0)
    assert torch.allclose(rms.var, reference.var(0, unbiased=False), rtol=1e-9, atol=0)


def test_normalize_uses_the_statistics_and_clips():
    rms = RunningNorm((2,), clip=5.0)
    x = torch.tensor([[3.0, -2.0]])
    assert torch.equal(rms.normalize(x), x / torch.sqrt(torch.tensor(1 + NORM_EPS)))  # count 0
    rms.merge(summarize(torch.tensor([[0.0, 0.0], [2.0, 4.0]]), (2,)))  # mean (1, 2), var (1, 4)
    out = rms.normalize(torch.tensor([[2.0, 1000.0], [1.0, 0.0]]))
    assert out.dtype == torch.float32
    assert torch.allclose(out, torch.tensor([[1.0, 5.0], [0.0, -1.0]]), atol=1e-6)


def test_an_empty_summary_changes_nothing():
    rms = RunningNorm(())
    rms.merge(summarize(torch.tensor([1.0, 3.0]), ()))
    before = {k: v.clone() for k, v in rms.state_dict().items()}
    rms.merge(summarize(torch.empty(0), ()))
    assert all(torch.equal(before[k], v) for k, v in rms.state_dict().items())


def test_statistics_are_model_buffers_that_travel_with_the_state_dict():
    model = build_model((4,), Discrete(2), obs_norm=True, return_norm=True)
    assert {"obs_rms.count", "obs_rms.mean", "obs_rms.m2", "ret_rms.m2"} <= set(model.state_dict())
    assert not any("rms" in name for name, _ in model.named_parameters())  # never trained
    model.obs_rms.merge(summarize(torch.arange(8.0).view(2, 4), (4,)))
    copy = build_model((4,), Discrete(2), obs_norm=True, return_norm=True)
    copy.load_state_dict(model.state_dict())
    obs = torch.ones(3, 4)
    assert torch.equal(copy.normalize_obs(obs), model.normalize_obs(obs))
    plain = build_model((4,), Discrete(2))
    assert plain.obs_rms is None and plain.normalize_obs(obs) is obs


def test_obs_clip_must_be_positive():
    from ding_lite.config import compile_config
    from ding_lite.utils.errors import ConfigError

    with pytest.raises(ConfigError, match="obs_clip"):
        compile_config("cartpole_ppo", ["policy.model.obs_clip=0"])
