"""The pieces of the PPO update: minibatches, loss terms by name, their means."""

import copy
import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.policy.ppo_update import LossTerms, loss_terms, mean_terms, minibatches
from ding_lite.rl_utils import entropy_loss, normalize_advantages, ppo_policy_loss


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
            joined = torch.cat([getattr(p[i], key) for p in parts])
            assert torch.equal(joined, getattr(mb, key)), key
        assert all(p[i].obs.shape[0] == 8 // ranks for p in parts)


def test_loss_terms_by_name():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    terms = loss_terms(model, mb, clip_ratio=0.2, value_clip=False)
    assert isinstance(terms, LossTerms)
    assert LossTerms._fields == ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac", "kl_ref")
    dist, value = model(mb.obs)
    pg = ppo_policy_loss(dist.log_prob(mb.action), mb.logp, mb.adv, 0.2)
    assert torch.equal(terms.pg_loss, pg.pg_loss)
    assert torch.equal(terms.approx_kl, pg.approx_kl) and torch.equal(terms.clipfrac, pg.clipfrac)
    assert torch.equal(terms.v_loss, 0.5 * (value - mb.ret).square().mean())
    assert torch.equal(terms.entropy, entropy_loss(dist.entropy()))
    assert terms.kl_ref.item() == 0.0 and not terms.kl_ref.requires_grad
    assert terms.pg_loss.requires_grad and terms.v_loss.requires_grad
    assert terms.entropy.requires_grad and not terms.approx_kl.requires_grad
    clipped = loss_terms(model, mb._replace(value=mb.ret + 5), clip_ratio=0.2, value_clip=True)
    assert clipped.v_loss > terms.v_loss  # the value may move only 0.2 from the old one


def test_kl_to_the_reference():
    model = _model()
    mb = next(minibatches(_data(), torch.arange(20), 10, normalize=False))
    same = loss_terms(model, mb, clip_ratio=0.2, value_clip=False, ref_model=copy.deepcopy(model))
    assert same.kl_ref.item() == pytest.approx(0.0, abs=1e-7)
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.3)
    terms = loss_terms(model, mb, clip_ratio=0.2, value_clip=False, ref_model=ref)
    assert terms.kl_ref.item() > 0 and terms.kl_ref.requires_grad
    terms.kl_ref.backward()
    assert all(p.grad is None for p in ref.parameters())  # the reference is not trained


def test_mean_terms_average_each_field():
    kept = [
        LossTerms(*(torch.tensor(float(10 * i + j)) for j in range(6))).detach() for i in range(3)
    ]
    means = mean_terms(kept)
    assert list(means) == list(LossTerms._fields)
    for j, name in enumerate(LossTerms._fields):
        assert means[name] == pytest.approx(sum(10 * i + j for i in range(3)) / 3)
    assert all(math.isnan(v) for v in mean_terms([]).values())
