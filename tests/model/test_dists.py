"""Action distributions against torch.distributions references."""

import math

import pytest
import torch
from torch import distributions as D

from ding_lite.model import (
    TANH_CLAMP_EPS,
    ActionBounds,
    CategoricalDist,
    GaussianDist,
    HybridDist,
    pad_logits,
)

B = 6


@pytest.fixture
def g():
    return torch.Generator().manual_seed(0)


def randn(g, *shape):
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def test_categorical_matches_reference(g):
    logits, other_logits = randn(g, B, 4), randn(g, B, 4)
    dist, ref = CategoricalDist(logits), D.Categorical(logits=logits)
    action = ref.sample()
    torch.testing.assert_close(dist.log_prob(action), ref.log_prob(action))
    torch.testing.assert_close(dist.log_prob(action.double()), ref.log_prob(action))
    torch.testing.assert_close(dist.entropy(), ref.entropy())
    torch.testing.assert_close(
        dist.kl(CategoricalDist(other_logits)),
        D.kl_divergence(ref, D.Categorical(logits=other_logits)),
    )
    assert torch.equal(dist.mode(), logits.argmax(-1))
    sample = dist.sample()
    assert sample.shape == (B,) and sample.dtype == torch.int64


def test_categorical_masked_choices(g):
    logits = randn(g, B, 3)
    logits[:, 2] = -math.inf
    dist, ref = CategoricalDist(logits), D.Categorical(logits=logits)
    torch.testing.assert_close(dist.entropy(), ref.entropy())
    assert torch.isfinite(dist.kl(CategoricalDist(logits.clone()))).all()
    torch.testing.assert_close(dist.kl(CategoricalDist(logits.clone())), torch.zeros(B).double())
    assert (torch.stack([dist.sample() for _ in range(200)]) < 2).all()


def test_categorical_sample_frequencies():
    probs = torch.tensor([0.1, 0.2, 0.7])
    dist = CategoricalDist(probs.log().expand(20000, 3))
    freq = torch.bincount(dist.sample(), minlength=3).double() / 20000
    torch.testing.assert_close(freq, probs.double(), atol=0.015, rtol=0)


@pytest.mark.parametrize("shared_std", [False, True])
def test_gaussian_matches_reference(g, shared_std):
    d = 3
    mean, other_mean = randn(g, B, d), randn(g, B, d)
    log_std = 0.3 * randn(g, d) if shared_std else 0.3 * randn(g, B, d)
    other_log_std = 0.3 * randn(g, B, d)
    dist = GaussianDist(mean, log_std)
    ref = D.Independent(D.Normal(mean, log_std.exp().expand(B, d)), 1)
    action = ref.sample()
    torch.testing.assert_close(dist.log_prob(action), ref.log_prob(action))
    torch.testing.assert_close(dist.entropy(), ref.entropy())
    other_ref = D.Independent(D.Normal(other_mean, other_log_std.exp()), 1)
    torch.testing.assert_close(
        dist.kl(GaussianDist(other_mean, other_log_std)), D.kl_divergence(ref, other_ref)
    )
    assert dist.sample().shape == (B, d)
    assert torch.equal(dist.mode(), mean)


def test_gaussian_sample_statistics():
    dist = GaussianDist(torch.tensor([[1.0, -2.0]]).expand(20000, 2), torch.tensor([0.0, -1.0]))
    x = dist.sample()
    torch.testing.assert_close(x.mean(0), torch.tensor([1.0, -2.0]), atol=0.03, rtol=0)
    torch.testing.assert_close(x.std(0), torch.tensor([1.0, math.exp(-1.0)]), atol=0.03, rtol=0)


def test_kl_needs_same_family(g):
    with pytest.raises(TypeError, match="one family"):
        CategoricalDist(randn(g, B, 2)).kl(GaussianDist(randn(g, B, 1), randn(g, 1)))


def hybrid_case(g, bounded, parts=(2, 3)):
    d = 2
    mean, log_std = randn(g, B, d), 0.3 * randn(g, B, d)
    part_logits = [randn(g, B, n) for n in parts]
    bounds = None
    transforms = [D.TanhTransform()]
    if bounded:
        low, high = torch.tensor([-2.0, 0.0]).double(), torch.tensor([2.0, 5.0]).double()
        bounds = ActionBounds.from_low_high(low, high)
        transforms.append(D.AffineTransform(bounds.loc, bounds.scale))
    cont_ref = D.TransformedDistribution(D.Normal(mean, log_std.exp()), transforms)
    cat_refs = [D.Categorical(logits=lg) for lg in part_logits]
    dist = HybridDist(mean, log_std, pad_logits(part_logits), bounds)
    return dist, cont_ref, cat_refs, (mean, log_std, part_logits)


@pytest.mark.parametrize("bounded", [False, True])
def test_hybrid_log_prob_matches_tanh_transformed_reference(g, bounded):
    dist, cont_ref, cat_refs, _ = hybrid_case(g, bounded)
    cont = cont_ref.sample()
    disc = [ref.sample() for ref in cat_refs]
    action = torch.cat([cont] + [x.double().unsqueeze(-1) for x in disc], -1)
    expected = cont_ref.log_prob(cont).sum(-1)
    expected = expected + sum(ref.log_prob(x) for ref, x in zip(cat_refs, disc, strict=True))
    torch.testing.assert_close(dist.log_prob(action), expected)


def test_hybrid_entropy_and_kl(g):
    dist, _, cat_refs, (mean, log_std, _) = hybrid_case(g, bounded=True)
    other, _, other_cats, (o_mean, o_log_std, _) = hybrid_case(g, bounded=True)
    normal, o_normal = D.Normal(mean, log_std.exp()), D.Normal(o_mean, o_log_std.exp())
    ent = normal.entropy().sum(-1) + sum(ref.entropy() for ref in cat_refs)
    torch.testing.assert_close(dist.entropy(), ent)
    kl = D.kl_divergence(normal, o_normal).sum(-1)
    kl = kl + sum(D.kl_divergence(p, q) for p, q in zip(cat_refs, other_cats, strict=True))
    torch.testing.assert_close(dist.kl(other), kl)


@pytest.mark.parametrize("bounded", [False, True])
def test_hybrid_sample_and_mode(g, bounded):
    parts = (2, 4)
    dist, *_, (mean, _, part_logits) = hybrid_case(g, bounded, parts)
    low, high = (torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 5.0])) if bounded else (-1, 1)
    for _ in range(50):
        action = dist.sample()
        assert action.shape == (B, 2 + len(parts)) and action.dtype == torch.float64
        cont, disc = action[:, :2], action[:, 2:]
        assert ((cont > low) & (cont < high)).all()
        assert torch.equal(disc, disc.round())
        for i, n in enumerate(parts):  # padded choices are never drawn
            assert ((disc[:, i] >= 0) & (disc[:, i] < n)).all()
        a, logp = dist.sample_with_log_prob()
        torch.testing.assert_close(logp, dist.log_prob(a))
    mode = dist.mode()
    y = torch.tanh(mean)
    if bounded:
        y = dist.bounds.loc + dist.bounds.scale * y
    torch.testing.assert_close(mode[:, :2], y)
    for i, lg in enumerate(part_logits):
        assert torch.equal(mode[:, 2 + i], lg.argmax(-1).double())


def test_hybrid_saturated_action_has_finite_log_prob():
    mean = torch.tensor([[30.0, -30.0]])
    dist = HybridDist(mean, torch.zeros(1, 2), torch.zeros(1, 1, 2))
    action = dist.sample()
    assert (action[:, :2].abs() <= 1 - TANH_CLAMP_EPS).all()
    assert torch.isfinite(dist.log_prob(action)).all()
    assert torch.isfinite(dist.log_prob(torch.tensor([[1.0, -1.0, 1.0]]))).all()


def test_hybrid_without_discrete_parts(g):
    mean, log_std = randn(g, B, 2), randn(g, B, 2) * 0.1
    dist = HybridDist(mean, log_std, None)
    action = dist.sample()
    assert action.shape == (B, 2)
    ref = D.TransformedDistribution(D.Normal(mean, log_std.exp()), [D.TanhTransform()])
    torch.testing.assert_close(dist.log_prob(action), ref.log_prob(action).sum(-1))
    assert dist.entropy().shape == (B,) and dist.kl(dist).abs().max() < 1e-12


def test_log_prob_is_differentiable(g):
    mean = randn(g, B, 2).requires_grad_()
    logits = randn(g, B, 1, 3).requires_grad_()
    dist = HybridDist(mean, torch.zeros(2, dtype=torch.float64), logits)
    (dist.log_prob(dist.sample()).sum() + dist.entropy().sum()).backward()
    assert mean.grad is not None and logits.grad is not None
