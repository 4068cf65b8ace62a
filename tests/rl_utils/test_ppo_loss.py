"""PPO loss terms against hand-computed values."""

import math

import pytest
import torch

from ding_lite.rl_utils import (
    entropy_loss,
    explained_variance,
    normalize_advantages,
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


def _random(n=37, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, generator=g, dtype=torch.float64) for _ in range(4)]


def test_policy_and_value_losses_match_a_plain_loop():
    logp, logp_old, adv, values = _random()
    values_old, returns = values + 0.3 * logp, values - adv
    clip = 0.2
    pg, kl, clipped, v_plain, v_clip = 0.0, 0.0, 0, 0.0, 0.0
    for i in range(len(adv)):
        ratio = math.exp(logp[i].item() - logp_old[i].item())
        a = adv[i].item()
        pg += max(-a * ratio, -a * min(max(ratio, 1 - clip), 1 + clip))
        kl += (ratio - 1) - math.log(ratio)
        clipped += abs(ratio - 1) > clip
        v, v_old, ret = values[i].item(), values_old[i].item(), returns[i].item()
        v_plain += (v - ret) ** 2
        v_c = v_old + min(max(v - v_old, -clip), clip)
        v_clip += max((v - ret) ** 2, (v_c - ret) ** 2)
    n = len(adv)
    out = ppo_policy_loss(logp, logp_old, adv, clip)
    assert out.pg_loss.item() == pytest.approx(pg / n, rel=1e-12)
    assert out.approx_kl.item() == pytest.approx(kl / n, rel=1e-12)
    assert out.clipfrac.item() == pytest.approx(clipped / n)
    assert ppo_value_loss(values, values_old, returns, None).item() == pytest.approx(
        0.5 * v_plain / n, rel=1e-12
    )
    assert ppo_value_loss(values, values_old, returns, clip).item() == pytest.approx(
        0.5 * v_clip / n, rel=1e-12
    )


def test_normalize_advantages_matches_a_plain_loop():
    adv = _random(n=11)[0] * 4 + 3
    values = adv.tolist()
    mean = sum(values) / len(values)
    std = math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))  # Bessel
    expected = torch.tensor([(x - mean) / (std + 1e-8) for x in values], dtype=torch.float64)
    torch.testing.assert_close(normalize_advantages(adv), expected, rtol=1e-12, atol=1e-12)
    # A constant minibatch gives zeros, not NaN.
    assert torch.equal(normalize_advantages(torch.full((5,), 2.0)), torch.zeros(5))
