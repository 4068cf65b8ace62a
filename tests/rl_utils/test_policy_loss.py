"""The policy-loss registry and the bundled losses against hand-computed values."""

import math

import pytest
import torch

from ding_lite.rl_utils import (
    ClipRanges,
    get_policy_loss,
    list_policy_losses,
    ppo_policy_loss,
    register_policy_loss,
)
from ding_lite.rl_utils import policy_loss as module
from ding_lite.utils.registry import RegistryError

# Four samples: ratios 0.5, 1.1, 1.5 and 5.0 (log-probabilities against 0), advantages of
# both signs, so that each clip bound is met somewhere.
RATIO = torch.tensor([0.5, 1.1, 1.5, 5.0])
LOGP_OLD = torch.zeros(4)
ADV = torch.tensor([-1.0, 2.0, 1.0, -0.5])
# Every clip setting, as a test states them (the config's defaults are not rl_utils').
CLIP = dict(clip_ratio=0.2, clip_ratio_low=None, clip_ratio_high=None, clip_ratio_c=3.0, is_max=1.0)


def _loss(name, **clip):
    logp = RATIO.log().requires_grad_()
    loss, metrics = get_policy_loss(name)(logp, LOGP_OLD, ADV, ClipRanges(**{**CLIP, **clip}))
    return loss, metrics, logp


def test_the_bundled_losses_come_first_in_order():
    assert list_policy_losses()[:3] == ["ppo_clip", "dual_clip", "clip_higher"]


def test_ppo_clip_is_the_clipped_surrogate_of_ppo_policy_loss():
    loss, metrics, logp = _loss("ppo_clip", clip_ratio=0.2)
    # Per sample max(-A r, -A clip(r, 0.8, 1.2)):
    #   r=0.5, A=-1: max(0.5, 0.8) = 0.8;  r=1.1, A=2: max(-2.2, -2.2) = -2.2
    #   r=1.5, A=1: max(-1.5, -1.2) = -1.2; r=5.0, A=-0.5: max(2.5, 0.6) = 2.5
    assert loss.item() == pytest.approx((0.8 - 2.2 - 1.2 + 2.5) / 4, abs=1e-6)
    want = ppo_policy_loss(logp, LOGP_OLD, ADV, 0.2)
    assert torch.equal(loss, want.pg_loss) and torch.equal(metrics["clipfrac"], want.clipfrac)
    assert metrics["clipfrac"].item() == pytest.approx(
        3 / 4, abs=1e-6
    )  # 0.5, 1.5 and 5.0 left [0.8, 1.2]
    assert set(metrics) == {"approx_kl", "clipfrac"}


def test_dual_clip_bounds_the_loss_of_negative_advantages_by_c():
    loss, metrics, logp = _loss("dual_clip", clip_ratio=0.2, clip_ratio_c=3.0)
    # As ppo_clip, but a negative advantage's loss is at most -3 A: sample 4's 2.5 becomes
    # min(2.5, 1.5) = 1.5; sample 1's 0.8 stays (below 3.0).
    assert loss.item() == pytest.approx((0.8 - 2.2 - 1.2 + 1.5) / 4, abs=1e-6)
    assert metrics["clipfrac_lower"].item() == pytest.approx(1 / 4, abs=1e-6)
    assert metrics["clipfrac"].item() == pytest.approx(3 / 4, abs=1e-6)
    loss.backward()
    # The bound is a constant in the ratio: no gradient reaches the bounded sample.
    assert logp.grad[3].item() == 0.0 and logp.grad[1].item() != 0.0


def test_clip_higher_clips_above_and_below_1_with_ranges_of_their_own():
    loss, metrics, _ = _loss("clip_higher", clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.6)
    # Range [0.8, 1.6]: r=1.5, A=1 is now inside: max(-1.5, -1.5) = -1.5 (ppo_clip: -1.2).
    assert loss.item() == pytest.approx((0.8 - 2.2 - 1.5 + 2.5) / 4, abs=1e-6)
    assert metrics["clipfrac"].item() == pytest.approx(2 / 4, abs=1e-6)  # 0.5 and 5.0 left it
    same, _, _ = _loss("clip_higher", clip_ratio=0.2)  # both ranges fall back to clip_ratio
    assert same.item() == pytest.approx(_loss("ppo_clip", clip_ratio=0.2)[0].item())


def test_approx_kl_is_the_usual_non_negative_estimate_for_every_bundled_loss():
    logratio = RATIO.log()
    want = ((RATIO - 1) - logratio).mean().item()
    for name in ("ppo_clip", "dual_clip", "clip_higher"):
        assert _loss(name, clip_ratio=0.2)[1]["approx_kl"].item() == pytest.approx(want, abs=1e-6)


@pytest.fixture
def clean_registry(monkeypatch):
    """A copy of the registry, so what a test registers goes away with it."""
    monkeypatch.setattr(module, "POLICY_LOSS_REGISTRY", module.POLICY_LOSS_REGISTRY.copy())


def test_register_as_a_decorator_and_errors(clean_registry):
    @register_policy_loss("half_ppo")
    def half_ppo(logp, logp_old, adv, clip):
        loss, metrics = get_policy_loss("ppo_clip")(logp, logp_old, adv, clip)
        return 0.5 * loss, metrics

    assert get_policy_loss("half_ppo") is half_ppo  # the decorator returns the function
    assert list_policy_losses()[-1] == "half_ppo"
    with pytest.raises(RegistryError, match="half_ppo"):
        register_policy_loss("half_ppo", half_ppo)
    register_policy_loss("half_ppo", half_ppo, force=True)
    with pytest.raises(RegistryError, match="did you mean 'dual_clip'"):
        get_policy_loss("dual_clipp")
    with pytest.raises(TypeError, match="must be callable"):
        register_policy_loss("not_a_loss", 3)


def test_clip_ranges_fall_back_to_clip_ratio():
    clip = ClipRanges(**{**CLIP, "clip_ratio": 0.1, "clip_ratio_high": 0.3})
    assert (clip.low, clip.high) == (0.1, 0.3)
    assert math.isclose(ClipRanges(**CLIP).high, 0.2)
