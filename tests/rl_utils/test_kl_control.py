"""The KL-in-reward coefficient: fixed stays, adaptive moves toward its target."""

from __future__ import annotations

import math

import pytest
import torch

from ding_lite.policy.ppo.settings import kl_controller
from ding_lite.rl_utils.kl_control import KLController
from ding_lite.utils.errors import ConfigError


def test_a_fixed_coefficient_never_moves():
    kl = KLController(0.05)
    for value in (0.0, 1.0, 100.0):
        kl.update(value, 1000)
    assert kl.coef == 0.05


def test_the_adaptive_coefficient_moves_toward_the_target_on_a_fixed_kl_sequence():
    target, horizon, n = 0.01, 10_000, 2_000
    up = KLController(0.1, adaptive=True, target=target, horizon=horizon)
    down = KLController(0.1, adaptive=True, target=target, horizon=horizon)
    ups, downs = [], []
    for _ in range(10):
        up.update(0.05, n)  # 5x the target: the error is clipped to +0.2
        down.update(0.002, n)  # a fifth of it: -0.8, clipped to -0.2
        ups.append(up.coef)
        downs.append(down.coef)
    assert ups == sorted(ups) and downs == sorted(downs, reverse=True)
    assert up.coef == pytest.approx(0.1 * (1 + 0.2 * n / horizon) ** 10)
    assert down.coef == pytest.approx(0.1 * (1 - 0.2 * n / horizon) ** 10)
    # A KL slightly above the target moves it by the proportional error, not the clip.
    near = KLController(0.1, adaptive=True, target=target, horizon=horizon)
    near.update(0.011, n)
    assert near.coef == pytest.approx(0.1 * (1 + 0.1 * n / horizon))
    # At the target it stays.
    still = KLController(0.1, adaptive=True, target=target, horizon=horizon)
    still.update(target, n)
    assert still.coef == pytest.approx(0.1)


def test_the_state_resumes_the_adapted_coefficient():
    kl = KLController(0.1, adaptive=True, target=0.01, horizon=100)
    kl.update(1.0, 50)
    again = KLController(0.1, adaptive=True, target=0.01, horizon=100)
    again.load_state_dict(kl.state_dict())
    assert again.coef == kl.coef != 0.1


def test_config_options():
    assert kl_controller({"type": "none", "coef": 0.1}) is None
    base = {"coef": 0.2, "target": 0.01, "horizon": 10, "estimator": "k1"}
    fixed = kl_controller({"type": "fixed", **base})
    assert fixed is not None and not fixed.adaptive and fixed.coef == 0.2
    k3 = kl_controller({"type": "fixed", **base, "estimator": "low_var_kl"})
    assert k3.estimate(torch.tensor([0.0]), torch.tensor([-1.0])).item() == pytest.approx(
        math.exp(-1.0)
    )
    with pytest.raises(ConfigError, match="estimator=full: a step's reward has the log-probs"):
        kl_controller({"type": "fixed", **base, "estimator": "full"})
    with pytest.raises(ConfigError, match="kl_in_reward.type must be one of"):
        kl_controller({"type": "pid"})
    with pytest.raises(ConfigError, match="kl_in_reward.target out of range"):
        kl_controller(
            {"type": "adaptive", "coef": 0.1, "target": 0, "horizon": 10, "estimator": "k1"}
        )
