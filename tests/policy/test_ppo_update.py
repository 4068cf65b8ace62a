"""The pieces of the PPO update: minibatches, loss terms by name, their sum and means."""

import copy
import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.policy.ppo.batches import minibatches
from ding_lite.policy.ppo.settings import PPOSettings
from ding_lite.policy.ppo.terms import (
    LOSS_TERM_REGISTRY,
    MinibatchPass,
    TermWeights,
    logged,
    loss_terms,
    mean_terms,
    total_loss,
)
from ding_lite.rl_utils import (
    ClipRanges,
    entropy_loss,
    get_kl_estimator,
    normalize_advantages,
    ppo_policy_loss,
)
from ding_lite.rl_utils.policy_loss import ppo_clip


def _data(n=20, obs_dim=3):
    g = torch.Generator().manual_seed(0)
    return {
        "obs": torch.randn(n, obs_dim, generator=g),
        "action": torch.randint(0, 2, (n,), generator=g),
        "logp": torch.randn(n, generator=g) - 1,
        "value": torch.randn(n, generator=g),
        "ret": torch.randn(n, generator=g),
        "adv": torch.randn(n, generator=g) * 3 + 2,
    }


def _model():
    cfg = compile_config("cartpole_ppo", ["policy.model.hidden_sizes=[8]"])
    torch.manual_seed(0)
    return PPOPolicy(cfg.policy, obs_shape=(3,), action_space=Discrete(2)).model


def test_minibatches_follow_the_order_and_drop_the_partial_last():
    data = _data()
    order = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    mbs = list(minibatches(data, order, 8, normalize=False))
    assert len(mbs) == 2  # 20 samples: 8 + 8, the last 4 dropped
    for i, mb in enumerate(mbs):
        inds = order[i * 8 : (i + 1) * 8]
        for key in ("obs", "action", "logp", "value", "ret", "adv"):
            assert torch.equal(getattr(mb, key), data[key][inds]), key


@pytest.mark.parametrize("ranks", [2, 4])
def test_rank_parts_make_up_the_whole_minibatch(ranks):
    data = _data()
    order = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    whole = list(minibatches(data, order, 8, normalize=True))
    parts = [
        list(minibatches(data, order, 8, normalize=True, rank=r, ranks=ranks)) for r in range(ranks)
    ]
    for i, mb in enumerate(whole):
        # Normalized over the whole minibatch: the ranks' parts are slices of the same.
        torch.testing.assert_close(
            mb.adv, normalize_advantages(data["adv"][order[i * 8 : (i + 1) * 8]])
        )
        for key in mb._fields:
            if getattr(mb, key) is None:  # a feed-forward model's state
                continue
            joined = torch.cat([getattr(p[i], key) for p in parts])
            assert torch.equal(joined, getattr(mb, key)), key
        assert all(p[i].obs.shape[0] == 8 // ranks for p in parts)


def _terms(
    model, mb, *, clip_ratio=0.2, v_clip=None, ref_model=None, policy_loss=ppo_clip, kl="full"
):
    clip = ClipRanges(clip_ratio, None, None, clip_ratio_c=3.0, is_max=1.0)
    p = MinibatchPass(
        model,
        mb,
        clip=clip,
        v_clip=v_clip,
        ref_model=ref_model,
        policy_loss=policy_loss,
        kl_estimator=kl,
    )
    return loss_terms(p)


def test_loss_terms_by_name():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    terms = _terms(model, mb)
    assert list(terms) == ["pg_loss", "entropy", "v_loss", "kl_ref", "approx_kl", "clipfrac"]
    assert [LOSS_TERM_REGISTRY.get(n).is_loss for n in terms] == [True] * 4 + [False] * 2
    dist, value = model(mb.obs)
    pg = ppo_policy_loss(dist.log_prob(mb.action), mb.logp, mb.adv, 0.2)
    assert torch.equal(terms["pg_loss"], pg.pg_loss)
    assert torch.equal(terms["approx_kl"], pg.approx_kl)
    assert torch.equal(terms["clipfrac"], pg.clipfrac)
    assert torch.equal(terms["v_loss"], 0.5 * (value - mb.ret).square().mean())
    assert torch.equal(terms["entropy"], entropy_loss(dist.entropy()))
    assert terms["kl_ref"].item() == 0.0 and not terms["kl_ref"].requires_grad
    assert terms["pg_loss"].requires_grad and terms["v_loss"].requires_grad
    assert terms["entropy"].requires_grad and not terms["approx_kl"].requires_grad
    clipped = _terms(model, mb._replace(value=mb.ret + 5), v_clip=0.2)
    assert clipped["v_loss"] > terms["v_loss"]  # the value may move only 0.2 from the old one


def test_the_weighted_sum_and_value_warmup():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    terms = _terms(model, mb)
    settings = PPOSettings.from_cfg(compile_config("cartpole_ppo").policy)
    full = TermWeights(settings, value_only=False, entropy_weight=0.01, kl_coef=0.0)
    want = terms["pg_loss"] - 0.01 * terms["entropy"] + settings.value_weight * terms["v_loss"]
    assert torch.equal(total_loss(terms, full), want)
    warmup = TermWeights(settings, value_only=True, entropy_weight=0.01, kl_coef=0.5)
    want = settings.value_weight * terms["v_loss"] + 0.5 * terms["kl_ref"]
    assert torch.equal(total_loss(terms, warmup), want)


def test_kl_to_the_reference():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    same = _terms(model, mb, ref_model=copy.deepcopy(model))
    assert same["kl_ref"].item() == pytest.approx(0.0, abs=1e-7)
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.3)
    terms = _terms(model, mb, ref_model=ref)
    assert terms["kl_ref"].item() > 0 and terms["kl_ref"].requires_grad
    terms["kl_ref"].backward()
    assert all(p.grad is None for p in ref.parameters())  # the reference is not trained


@pytest.mark.parametrize("estimator", ["k1", "abs", "k2", "k3", "low_var_kl"])
def test_the_kl_term_by_a_sampled_estimator(estimator):
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    same = _terms(model, mb, ref_model=copy.deepcopy(model), kl=estimator)
    assert same["kl_ref"].item() == pytest.approx(0.0, abs=1e-6)
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.3)
    terms = _terms(model, mb, ref_model=ref, kl=estimator)
    dist, ref_dist = model.get_dist(mb.obs), ref.get_dist(mb.obs)
    logp, ref_logp = dist.log_prob(mb.action), ref_dist.log_prob(mb.action)
    want = get_kl_estimator(estimator)(logp, ref_logp).mean()
    assert terms["kl_ref"].item() == pytest.approx(want.item(), rel=1e-5)
    assert terms["kl_ref"].requires_grad
    terms["kl_ref"].backward()
    assert all(p.grad is None for p in ref.parameters())


def test_mean_terms_average_each_field():
    names = LOSS_TERM_REGISTRY.names()
    kept = [{n: torch.tensor(float(10 * i + j)) for j, n in enumerate(names)} for i in range(3)]
    means = mean_terms(kept)
    assert set(means) == set(names)
    for j, name in enumerate(names):
        assert means[name] == pytest.approx(sum(10 * i + j for i in range(3)) / 3)
    assert all(math.isnan(v) for v in mean_terms([]).values())
    # A policy loss's own metrics are averaged after the terms, by name.
    with_metrics = [{**t, "lower": torch.tensor(float(i))} for i, t in enumerate(kept)]
    assert mean_terms(with_metrics)["lower"] == pytest.approx(1.0)
    assert logged({"pg_loss": 1.0, "lower": 2.0}) == {"policy_loss": 1.0, "losses/lower": 2.0}


def test_a_registered_policy_loss_replaces_the_policy_term_only():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    plain = _terms(model, mb)

    def half(logp, logp_old, adv, clip):  # no approx_kl, no clipfrac: both filled in
        return 0.5 * (-(adv * (logp - logp_old).exp()).mean()), {"extra": adv.abs().mean()}

    terms = _terms(model, mb, policy_loss=half)
    dist, _ = model(mb.obs)
    ratio = (dist.log_prob(mb.action) - mb.logp).exp()
    assert terms["pg_loss"].item() == pytest.approx(-0.5 * (mb.adv * ratio).mean().item(), abs=1e-6)
    assert torch.equal(terms["v_loss"], plain["v_loss"])
    assert torch.equal(terms["entropy"], plain["entropy"])
    assert torch.equal(terms["approx_kl"], plain["approx_kl"])
    assert math.isnan(terms["clipfrac"].item())
    assert not terms["extra"].requires_grad and "extra" not in LOSS_TERM_REGISTRY


@pytest.mark.parametrize(
    ("value_clip", "value_clip_range", "expected"),
    [(False, None, None), (False, 1.0, None), (True, None, 0.2), (True, 1.0, 1.0)],
)
def test_the_value_clip_range_is_its_own_or_the_ratio_s(value_clip, value_clip_range, expected):
    overrides = [
        f"policy.learn.value_clip={str(value_clip).lower()}",
        f"policy.learn.value_clip_range={value_clip_range if value_clip_range else 'none'}",
    ]
    cfg = compile_config("cartpole_ppo", overrides)
    assert PPOSettings.from_cfg(cfg.policy).v_clip == expected


def test_a_wider_value_clip_range_lets_the_value_move_further():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    _, value = model(mb.obs)
    old = (value + 0.5).detach()  # every old value 0.5 above the current one
    mb = mb._replace(value=old, ret=value.detach() - 1.0)
    # Range 0.2: the clipped value old - 0.2 is 1.3 from the return; range 1.0: 0.5 from it
    # (not clipped, since the move of 0.5 is inside the range), so the loss is the plain one.
    narrow = _terms(model, mb, v_clip=0.2)["v_loss"]
    wide = _terms(model, mb, v_clip=1.0)["v_loss"]
    plain = _terms(model, mb, v_clip=None)["v_loss"]
    torch.testing.assert_close(narrow, torch.tensor(0.5 * 1.3**2), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(wide, plain)
    torch.testing.assert_close(plain, torch.tensor(0.5 * 1.0), rtol=1e-5, atol=1e-5)


def test_batch_stats_are_the_raw_advantages_moments_and_the_explained_variance():
    from ding_lite.policy.ppo.update import batch_stats
    from ding_lite.rl_utils import explained_variance

    data = {
        "adv": torch.tensor([1.0, -1.0, 3.0, 1.0]),
        "value": torch.tensor([0.0, 1.0, 2.0, 3.0]),
        "ret": torch.tensor([0.5, 1.0, 2.5, 2.0]),
    }
    stats = batch_stats(data)
    assert stats["data/advantage_mean"] == pytest.approx(1.0)
    assert stats["data/advantage_std"] == pytest.approx(math.sqrt(8 / 3))  # Bessel's
    assert stats["explained_variance"] == explained_variance(data["value"], data["ret"])
