"""PPO loss terms against hand-computed values."""

import math

import pytest
import torch

from ding_lite.rl_utils import (
    entropy_loss,
    explained_variance,
    ppo_policy_loss,
    ppo_value_loss,
)


def t(*xs):
    return torch.tensor(xs, dtype=torch.float64)


def test_policy_loss_inside_clip_range_is_plain_surrogate():
    ratio = t(1.1, 0.95)
    adv = t(2.0, -1.0)
    out = ppo_policy_loss(ratio.log(), t(0.0, 0.0), adv, clip_ratio=0.2)
    # mean(-adv * ratio) = mean(-2.2, 0.95)
    torch.testing.assert_close(out.pg_loss, torch.tensor(-0.625, dtype=torch.float64))
    assert out.clipfrac.item() == 0.0


def test_policy_loss_clips_ratio_outside_range():
    # Positive advantage, ratio 1.5: clipped to 1.2. Negative advantage, ratio 0.5: clipped
    # to 0.8. Positive advantage with ratio 0.5 is not clipped (the pessimistic term wins).
    logp_old = t(-1.0, -2.0, -0.5)
    ratio = t(1.5, 0.5, 0.5)
    adv = t(1.0, -2.0, 3.0)
    out = ppo_policy_loss(logp_old + ratio.log(), logp_old, adv, clip_ratio=0.2)
    expected = (-1.0 * 1.2 + 2.0 * 0.8 - 3.0 * 0.5) / 3
    torch.testing.assert_close(out.pg_loss, torch.tensor(expected, dtype=torch.float64))
    torch.testing.assert_close(out.clipfrac, torch.tensor(1.0, dtype=torch.float64))
    logratio = ratio.log()
    torch.testing.assert_close(out.approx_kl, ((ratio - 1) - logratio).mean())


def test_policy_loss_gradient_vanishes_where_clipped():
    logp = t(math.log(1.5), math.log(1.1)).requires_grad_()
    out = ppo_policy_loss(logp, t(0.0, 0.0), t(1.0, 1.0), clip_ratio=0.2)
    out.pg_loss.backward()
    torch.testing.assert_close(logp.grad, t(0.0, -1.1 / 2))
    assert not out.approx_kl.requires_grad and not out.clipfrac.requires_grad
    torch.testing.assert_close(out.clipfrac, torch.tensor(0.5, dtype=torch.float64))


def test_approx_kl_zero_for_identical_policies():
    logp = t(-0.3, -1.2, -2.0)
    out = ppo_policy_loss(logp, logp.clone(), t(1.0, -1.0, 0.5), clip_ratio=0.1)
    assert out.approx_kl.item() == 0.0


def test_value_loss_unclipped():
    v_loss = ppo_value_loss(t(1.0, 2.0), t(0.0, 0.0), t(0.0, 4.0), clip_ratio=None)
    torch.testing.assert_close(v_loss, torch.tensor(0.5 * (1.0 + 4.0) / 2, dtype=torch.float64))


def test_value_loss_clipped_takes_the_larger_loss():
    values = t(1.0, 0.5, 3.0)
    values_old = t(0.0, 0.0, 0.0)
    returns = t(0.0, 1.0, 3.0)
    v_loss = ppo_value_loss(values, values_old, returns, clip_ratio=0.2)
    # Sample 0: unclipped (1-0)^2=1, clipped (0.2-0)^2=0.04 -> 1.
    # Sample 1: unclipped (0.5-1)^2=0.25, clipped (0.2-1)^2=0.64 -> 0.64.
    # Sample 2: unclipped 0, clipped (0.2-3)^2=7.84 -> 7.84.
    expected = 0.5 * (1.0 + 0.64 + 7.84) / 3
    torch.testing.assert_close(v_loss, torch.tensor(expected, dtype=torch.float64))


def test_entropy_loss_is_mean():
    torch.testing.assert_close(entropy_loss(t(0.5, 1.5, 1.0)), torch.tensor(1.0).double())


def test_explained_variance():
    y = t(1.0, 2.0, 4.0)
    assert explained_variance(y, y) == pytest.approx(1.0)
    assert explained_variance(torch.full_like(y, y.mean().item()), y) == pytest.approx(0.0)
    assert math.isnan(explained_variance(y, t(3.0, 3.0, 3.0)))
    assert isinstance(explained_variance(y, y), float)
