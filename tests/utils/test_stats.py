import math

import pytest
import torch

from ding_lite.utils.stats import OutcomeCounts, count_outcomes, wilson_interval


def test_wilson_interval_known_values():
    # Reference values of the 95% Wilson score interval (z = 1.96).
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.27754, abs=1e-5)
    low, high = wilson_interval(50, 100)
    assert low == pytest.approx(0.40383, abs=1e-5) and high == pytest.approx(0.59617, abs=1e-5)
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.72246, abs=1e-5) and high == 1.0
    low, high = wilson_interval(623, 1000)
    assert low == pytest.approx(0.59258, abs=1e-4) and high == pytest.approx(0.65245, abs=1e-4)


def test_wilson_interval_narrows_with_z_and_rejects_bad_counts():
    wide, narrow = wilson_interval(3, 10, z=2.576), wilson_interval(3, 10, z=1.0)
    assert wide[0] < narrow[0] < 0.3 < narrow[1] < wide[1]
    for k, n in ((0, 0), (-1, 5), (6, 5)):
        with pytest.raises(ValueError, match="0 <= k <= n"):
            wilson_interval(k, n)


def test_count_outcomes_by_sign():
    counts = count_outcomes(torch.tensor([1.0, -1.0, 0.0, 1.0, 1.0]))
    assert counts == OutcomeCounts(wins=3, losses=1, draws=1) and counts.n == 5
    assert counts.rates() == {"win_rate": 0.6, "loss_rate": 0.2, "draw_rate": 0.2}
    assert count_outcomes([]).n == 0
    assert all(math.isnan(v) for v in count_outcomes([]).rates().values())
