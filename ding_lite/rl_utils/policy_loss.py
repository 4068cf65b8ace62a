"""A registry of PPO policy losses, so configs can name one (``policy_loss: dual_clip``).

A policy loss is a function ``fn(logp, logp_old, adv, clip) -> (loss, metrics)``:

- ``logp``, ``logp_old``, ``adv``: [N] log-probabilities of the taken actions under the
  current policy (with gradient) and under the policy that collected them, and the
  advantages (normalized when the estimator asks for it);
- ``clip``: the :class:`ClipRanges` of ``policy.learn``;
- ``loss``: the 0-dim loss to minimize, with gradient;
- ``metrics``: named 0-dim detached tensors. The update averages each over the minibatches
  and logs it beside the losses (tensorboard ``losses/<name>``). ``approx_kl`` steers
  ``target_kl``; a loss that leaves it out gets the usual estimate, one that leaves out
  ``clipfrac`` logs NaN for it.

Built in: ``ppo_clip`` (the clipped surrogate of the PPO paper), ``dual_clip`` (Ye et al.,
2020: for negative advantages the loss is also bounded by ``clip_ratio_c`` times the
advantage, so a ratio far above 1 cannot make it unbounded), ``clip_higher`` (DAPO, Yu et
al., 2025: a clip range of its own above 1, ``clip_ratio_high``, beside the one below,
``clip_ratio_low``) and ``decoupled`` (Hilton et al., 2021: the ratio clipped around the
*proximal* policy, the learner's as the update starts, and each sample weighted by the
proximal over the behaviour policy, truncated at ``is_max``; for data a policy version or
more old). A loss registered with ``proximal=True`` also gets the keyword ``logp_prox``,
the proximal policy's log-probs [N]. Register another in a config file or script::

    @register_policy_loss("plain_pg")
    def plain_pg(logp, logp_old, adv, clip):
        return -(adv * logp).mean(), {}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ding_lite.utils.registry import Registry

from .ppo import ppo_policy_loss


@dataclass(frozen=True)
class ClipRanges:
    """The ratio clip settings a policy loss may read (``policy.learn``'s keys of the same
    names; ``ding_lite.policy.ppo.PPOSettings.clip`` builds them from a config).

    Attributes:
        clip_ratio: PPO's epsilon: the ratio is clipped to ``[1 - eps, 1 + eps]``.
        clip_ratio_low: ``clip_higher``'s range below 1 (None: ``clip_ratio``).
        clip_ratio_high: ``clip_higher``'s range above 1 (None: ``clip_ratio``).
        clip_ratio_c: ``dual_clip``'s bound: for a negative advantage the loss is at most
            ``-clip_ratio_c * adv`` per sample; above 1.
        is_max: ``decoupled``'s truncation of the importance weight of the proximal over
            the behaviour policy.
    """

    clip_ratio: float
    clip_ratio_low: float | None
    clip_ratio_high: float | None
    clip_ratio_c: float
    is_max: float

    @property
    def low(self) -> float:
        return self.clip_ratio if self.clip_ratio_low is None else float(self.clip_ratio_low)

    @property
    def high(self) -> float:
        return self.clip_ratio if self.clip_ratio_high is None else float(self.clip_ratio_high)


PolicyLossFn = Callable[..., tuple[Tensor, dict[str, Tensor]]]
"""``fn(logp, logp_old, adv, clip) -> (loss, metrics)``, see the module docstring; a proximal
one also takes ``logp_prox`` by keyword (so the type leaves the arguments unchecked)."""

POLICY_LOSS_REGISTRY: Registry[PolicyLossFn] = Registry("policy loss")
_PROXIMAL: dict[str, bool] = {}  # name -> registered with proximal=True


def register_policy_loss(
    name: str, fn: PolicyLossFn | None = None, *, force: bool = False, proximal: bool = False
) -> Any:
    """Registers a policy loss under ``name``; without ``fn``, a decorator.

    Args:
        name: Name used in configs (``policy.learn.policy_loss``); a non-empty string.
        fn: The loss; see :data:`PolicyLossFn`. Omitted, the call returns a decorator.
        force: Replace a loss already registered under ``name`` instead of raising.
        proximal: ``fn`` also takes the keyword ``logp_prox`` (the learner's log-probs as
            the update starts), which the learner then computes for every rollout.

    Returns:
        ``fn``; the decorator form returns the decorated function itself.

    Raises:
        RegistryError: ``name`` is taken and ``force`` is False, or ``name`` is empty.
        TypeError: ``fn`` is not callable.
    """

    def add(fn: PolicyLossFn) -> PolicyLossFn:
        if not callable(fn):
            raise TypeError(f"policy loss {name!r}: fn must be callable; got {fn!r}")
        POLICY_LOSS_REGISTRY.register(name, fn, force=force)
        _PROXIMAL[name] = bool(proximal)
        return fn

    return add if fn is None else add(fn)


def get_policy_loss(name: str) -> PolicyLossFn:
    """The loss registered under ``name``.

    Raises:
        RegistryError: ``name`` is unknown; the message suggests the closest name.
    """
    return POLICY_LOSS_REGISTRY.get(name)


def needs_proximal(name: str) -> bool:
    """Whether the loss registered under ``name`` takes ``logp_prox``.

    Raises:
        RegistryError: ``name`` is unknown; the message suggests the closest name.
    """
    POLICY_LOSS_REGISTRY.get(name)
    return _PROXIMAL.get(name, False)


def list_policy_losses() -> list[str]:
    """The registered names, the bundled ones first."""
    return POLICY_LOSS_REGISTRY.names()


def approx_kl(logratio: Tensor) -> Tensor:
    """The always non-negative estimate of KL(behaviour || current), ``((r - 1) - log r)``
    averaged, from ``logratio = logp - logp_old``; detached."""
    with torch.no_grad():
        return (logratio.exp() - 1.0 - logratio).mean()


@register_policy_loss("ppo_clip")
def ppo_clip(
    logp: Tensor, logp_old: Tensor, adv: Tensor, clip: ClipRanges
) -> tuple[Tensor, dict[str, Tensor]]:
    """``mean(max(-adv * ratio, -adv * clamp(ratio, 1 - eps, 1 + eps)))``; the default."""
    out = ppo_policy_loss(logp, logp_old, adv, clip.clip_ratio)
    return out.pg_loss, {"approx_kl": out.approx_kl, "clipfrac": out.clipfrac}


@register_policy_loss("dual_clip")
def dual_clip(
    logp: Tensor, logp_old: Tensor, adv: Tensor, clip: ClipRanges
) -> tuple[Tensor, dict[str, Tensor]]:
    """``ppo_clip``'s per-sample loss, and for a negative advantage at most
    ``-clip_ratio_c * adv``. ``clipfrac_lower``: the share of samples held by that bound."""
    eps, c = clip.clip_ratio, clip.clip_ratio_c
    logratio = logp - logp_old
    ratio = logratio.exp()
    clipped = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1.0 - eps, 1.0 + eps))
    bound = -adv * c
    negative = adv < 0
    per_sample = torch.where(negative, torch.min(clipped, bound), clipped)
    with torch.no_grad():
        clipfrac = ((ratio - 1.0).abs() > eps).to(ratio.dtype).mean()
        lower = (negative & (clipped > bound)).to(ratio.dtype).mean()
    metrics = {"approx_kl": approx_kl(logratio), "clipfrac": clipfrac}
    return per_sample.mean(), {**metrics, "clipfrac_lower": lower}


@register_policy_loss("clip_higher")
def clip_higher(
    logp: Tensor, logp_old: Tensor, adv: Tensor, clip: ClipRanges
) -> tuple[Tensor, dict[str, Tensor]]:
    """``ppo_clip`` with the ratio clipped to ``[1 - clip_ratio_low, 1 + clip_ratio_high]``
    (a wider range above lets unlikely actions with positive advantages gain more)."""
    low, high = clip.low, clip.high
    logratio = logp - logp_old
    ratio = logratio.exp()
    per_sample = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1.0 - low, 1.0 + high))
    with torch.no_grad():
        clipfrac = ((ratio < 1.0 - low) | (ratio > 1.0 + high)).to(ratio.dtype).mean()
    return per_sample.mean(), {"approx_kl": approx_kl(logratio), "clipfrac": clipfrac}


@register_policy_loss("decoupled", proximal=True)
def decoupled(
    logp: Tensor, logp_old: Tensor, adv: Tensor, clip: ClipRanges, *, logp_prox: Tensor
) -> tuple[Tensor, dict[str, Tensor]]:
    """Decoupled PPO: ``mean(w * max(-adv * r, -adv * clamp(r, 1 - eps, 1 + eps)))`` with
    ``r = exp(logp - logp_prox)`` (the ratio to the proximal policy) and the weight
    ``w = min(exp(logp_prox - logp_old), is_max)`` (proximal over behaviour, no gradient).
    With ``logp_prox == logp_old`` it is ``ppo_clip`` bit for bit. ``approx_kl`` and
    ``clipfrac`` are taken against the proximal policy; ``is_weight_mean`` is the mean
    weight and ``is_truncated`` the share of samples whose weight ``is_max`` cut."""
    eps = clip.clip_ratio
    with torch.no_grad():
        raw = (logp_prox - logp_old).exp()
        weight = torch.clamp(raw, max=clip.is_max)
    logratio = logp - logp_prox
    ratio = logratio.exp()
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1.0 - eps, 1.0 + eps)
    pg_loss = (torch.max(pg_loss1, pg_loss2) * weight).mean()
    with torch.no_grad():
        approx = ((ratio - 1.0) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > eps).to(ratio.dtype).mean()
        truncated = (raw > clip.is_max).to(ratio.dtype).mean()
    metrics = {"approx_kl": approx, "clipfrac": clipfrac, "is_weight_mean": weight.mean()}
    return pg_loss, {**metrics, "is_truncated": truncated}
