"""V-trace and decoupled PPO: exactly GAE and ppo_clip on the behaviour policy's own data,
and hand-computed cases off it."""

from __future__ import annotations

import math

import pytest
import torch

from ding_lite.rl_utils import (
    ClipRanges,
    gae_with_returns,
    get_adv_estimator,
    get_policy_loss,
    needs_proximal,
    register_adv_estimator,
    vtrace,
)
from ding_lite.rl_utils.policy_loss import decoupled, ppo_clip
from ding_lite.utils.registry import RegistryError


def _rollout(T: int = 7, B: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, B, generator=g)
    values = torch.randn(T, B, generator=g)
    next_values = torch.randn(T, B, generator=g)
    dones = torch.rand(T, B, generator=g) < 0.25
    terminated = dones & (torch.rand(T, B, generator=g) < 0.5)  # the others truncated
    return rewards, values, next_values, terminated, dones


@pytest.mark.parametrize("lam", [0.95, 1.0, 0.0])
def test_vtrace_on_the_behaviour_policy_is_gae_bit_for_bit(lam):
    inputs = _rollout()
    want = gae_with_returns(*inputs, 0.99, lam)
    got = vtrace(*inputs, 0.99, lam, log_rho=torch.zeros(7, 5))
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_vtrace_by_hand_on_four_steps():
    # One copy, gamma 0.9, lam 0.5, rho_max = c_max = 1; step 1 is truncated (done, not
    # terminated: it bootstraps from its final observation, the recursion stops there).
    r = [1.0, 0.5, -1.0, 2.0]
    v = [0.2, 0.4, 0.1, -0.3]
    nv = [0.4, 0.6, -0.3, 0.5]
    done = [False, True, False, False]
    ratio = [2.0, 0.5, 1.0, 0.25]  # ratios: 2 (truncated to 1), 0.5, 1, 0.25
    g, lam = 0.9, 0.5
    rho = [min(1.0, x) for x in ratio]
    delta = [rho[t] * (r[t] + g * nv[t] - v[t]) for t in range(4)]
    # delta: 1*(1 + .36 - .2) = 1.16; .5*(.5 + .54 - .4) = .32;
    #        1*(-1 - .27 - .1) = -1.37; .25*(2 + .45 + .3) = .6875
    adv = [0.0] * 4
    adv[3] = delta[3]  # 0.6875
    adv[2] = delta[2] + g * lam * rho[2] * adv[3]  # -1.37 + .45 * 1 * .6875 = -1.060625
    adv[1] = delta[1]  # the episode ended at step 1: 0.32
    adv[0] = delta[0] + g * lam * rho[0] * adv[1]  # 1.16 + .45 * 1 * .32 = 1.304
    assert adv == pytest.approx([1.304, 0.32, -1.060625, 0.6875])
    col = lambda xs, dtype=torch.float32: torch.tensor(xs, dtype=dtype).unsqueeze(1)  # noqa: E731
    got_adv, got_ret = vtrace(
        col(r),
        col(v),
        col(nv),
        col([False] * 4, torch.bool),
        col(done, torch.bool),
        g,
        lam,
        log_rho=col([math.log(x) for x in ratio]),
    )
    torch.testing.assert_close(got_adv.squeeze(1), torch.tensor(adv), rtol=0, atol=1e-6)
    torch.testing.assert_close(
        got_ret.squeeze(1), torch.tensor(adv) + torch.tensor(v), rtol=0, atol=1e-6
    )


def test_vtrace_truncates_ratios_above_its_maxima():
    inputs = _rollout(seed=1)
    log_rho = torch.randn(7, 5, generator=torch.Generator().manual_seed(2))
    capped = vtrace(*inputs, 0.99, 0.95, log_rho=log_rho.clamp(max=0.0))
    got = vtrace(*inputs, 0.99, 0.95, log_rho=log_rho)
    torch.testing.assert_close(got[0], capped[0], rtol=0, atol=1e-6)
    # Higher maxima let weights above 1 through.
    loose = vtrace(*inputs, 0.99, 0.95, log_rho=log_rho, rho_max=10.0, c_max=10.0)
    assert not torch.allclose(loose[0], got[0])


def test_vtrace_keeps_rho_max_and_c_max_apart():
    # Two steps, one copy, both ratios 2, gamma 0.9, lam 1, rho_max 1.5, c_max 1, r = 1, V = 0:
    # delta = [1.5 * 1, 1.5 * 1] = [1.5, 1.5]; A_1 = 1.5; A_0 = 1.5 + 0.9 * 1 * 1 * 1.5 = 2.85.
    # (Swapping the two truncations would give delta = [1, 1], A_0 = 1 + 0.9 * 1.5 = 2.35.)
    ones, zeros = torch.ones(2, 1), torch.zeros(2, 1)
    no = torch.zeros(2, 1, dtype=torch.bool)
    log_rho = torch.full((2, 1), math.log(2.0))
    adv, _ = vtrace(ones, zeros, zeros, no, no, 0.9, 1.0, log_rho=log_rho, rho_max=1.5, c_max=1.0)
    torch.testing.assert_close(adv.squeeze(1), torch.tensor([2.85, 1.5]), rtol=0, atol=1e-6)


def test_vtrace_refuses_bad_input():
    inputs = _rollout()
    with pytest.raises(ValueError, match="one shape"):
        vtrace(*inputs, 0.99, 0.95, log_rho=torch.zeros(7, 4))
    with pytest.raises(ValueError, match="must be > 0"):
        vtrace(*inputs, 0.99, 0.95, log_rho=torch.zeros(7, 5), rho_max=0.0)


def test_vtrace_is_registered_as_an_off_policy_estimator():
    est = get_adv_estimator("vtrace")
    assert est.off_policy and est.normalize and not est.episodic
    assert not get_adv_estimator("gae").off_policy
    with pytest.raises(ValueError, match="step-level"):
        register_adv_estimator("bad_offpolicy", vtrace, episodic=True, off_policy=True)


CLIP = ClipRanges(0.2, None, None, clip_ratio_c=3.0, is_max=1.0)


def _losses(seed: int = 0, n: int = 32):
    g = torch.Generator().manual_seed(seed)
    logp_old = torch.randn(n, generator=g) - 1.0
    logp = (logp_old + 0.3 * torch.randn(n, generator=g)).requires_grad_()
    adv = torch.randn(n, generator=g)
    return logp, logp_old, adv


def test_decoupled_on_the_behaviour_policy_is_ppo_clip_bit_for_bit():
    clip = CLIP
    logp, logp_old, adv = _losses()
    want, want_m = ppo_clip(logp, logp_old, adv, clip)
    (want_grad,) = torch.autograd.grad(want, logp)
    got, got_m = decoupled(logp, logp_old, adv, clip, logp_prox=logp_old.clone())
    (got_grad,) = torch.autograd.grad(got, logp)
    assert torch.equal(got, want) and torch.equal(got_grad, want_grad)
    assert torch.equal(got_m["approx_kl"], want_m["approx_kl"])
    assert torch.equal(got_m["clipfrac"], want_m["clipfrac"])
    assert got_m["is_weight_mean"] == 1.0 and got_m["is_truncated"] == 0.0


def test_decoupled_by_hand_on_four_samples():
    # eps 0.2, is_max 1. Per sample: proximal/behaviour weight w (truncated at 1), ratio
    # to the proximal r, advantage A; loss_i = w * max(-A r, -A clamp(r, 0.8, 1.2)).
    w_raw = [1.5, 0.5, 1.0, 0.8]
    r = [1.1, 1.5, 0.5, 1.0]
    adv = [1.0, 2.0, -1.0, -2.0]
    w = [min(1.0, x) for x in w_raw]  # [1, .5, 1, .8]
    per = [w[i] * max(-adv[i] * r[i], -adv[i] * min(max(r[i], 0.8), 1.2)) for i in range(4)]
    # 1*max(-1.1, -1.1) = -1.1; .5*max(-3, -2.4) = -1.2; 1*max(.5, .8) = .8; .8*max(2, 2) = 1.6
    assert per == pytest.approx([-1.1, -1.2, 0.8, 1.6])
    logp_old = torch.tensor([-1.0, -2.0, -0.5, -1.5])
    logp_prox = logp_old + torch.tensor(w_raw).log()
    logp = logp_prox + torch.tensor(r).log()
    loss, metrics = decoupled(logp, logp_old, torch.tensor(adv), CLIP, logp_prox=logp_prox)
    assert loss.item() == pytest.approx(sum(per) / 4, abs=1e-6)
    assert metrics["clipfrac"].item() == pytest.approx(0.5)  # 1.5 and 0.5 leave [0.8, 1.2]
    assert metrics["is_truncated"].item() == pytest.approx(0.25)
    assert metrics["is_weight_mean"].item() == pytest.approx(sum(w) / 4, abs=1e-6)


def test_only_proximal_losses_need_the_proximal_log_probs():
    assert needs_proximal("decoupled") and not needs_proximal("ppo_clip")
    assert get_policy_loss("decoupled") is decoupled
    with pytest.raises(RegistryError):
        needs_proximal("no_such_loss")
