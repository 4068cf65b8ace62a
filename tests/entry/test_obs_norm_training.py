"""Observation normalization makes learning blind to the observations' scale and offset.

The learning figure (env steps to solve CartPole with observations x * 1000 + 500 against
plain CartPole, medians over seeds) is bench/obs_norm.py's: whole training runs on several
seeds are a benchmark's work. Here: the mechanism exactly, and the bench script running.
"""

import pytest
import torch
from helpers import TINY, load_bench

from ding_lite.model.normalizer import RunningNorm


def test_normalized_inputs_do_not_see_an_affine_change_of_the_observations():
    """Merged rollout by rollout, the statistics of ``x * 1000 + 500`` normalize it to what
    those of ``x`` normalize ``x`` to, up to float32 rounding of the scaled values."""
    gen = torch.Generator().manual_seed(0)
    plain, scaled = RunningNorm((4,)), RunningNorm((4,))
    for _ in range(5):
        x = torch.randn(256, 4, generator=gen) * torch.tensor([0.5, 1.0, 0.1, 2.0])
        plain.merge(plain.summarize(x))
        scaled.merge(scaled.summarize(x * 1000 + 500))
        probe = torch.randn(64, 4, generator=gen)
        assert torch.allclose(
            plain.normalize(probe), scaled.normalize(probe * 1000 + 500), atol=1e-3
        )
    # Without the statistics the network would see values ~1000 times larger.
    assert not torch.allclose(probe, probe * 1000 + 500, atol=1.0)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_bench_runs_both_envs_and_reports(tmp_path, capsys):
    pytest.importorskip("gymnasium")
    bench = load_bench("obs_norm")
    assert bench.main(["--seeds", "0", "--max-env-steps", "128", *TINY]) == 0
    out = capsys.readouterr().out
    assert f"seed 0  {bench.UNSCALED_ID}" in out and f"seed 0  {bench.SCALED_ID}" in out
    assert "solved 0/1" in out  # a budget far too small to solve
