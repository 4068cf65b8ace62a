"""PPO loss terms (Schulman et al., 2017) as pure tensor functions.

Each function returns its terms separately; the caller weights and sums them, e.g.
``loss = pg_loss - ent_coef * entropy_loss + vf_coef * v_loss``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor


class PolicyLoss(NamedTuple):
    """Terms of the clipped surrogate objective.

    Attributes:
        pg_loss: Clipped surrogate loss to minimize, a scalar with gradient.
        approx_kl: Estimate of KL(old || new), ``((ratio - 1) - logratio).mean()``; a
            detached scalar, for logging and early stopping.
        clipfrac: Fraction of samples with ``|ratio - 1| > clip_ratio``; a detached scalar.
    """

    pg_loss: Tensor
    approx_kl: Tensor
    clipfrac: Tensor


def ppo_policy_loss(logp: Tensor, logp_old: Tensor, adv: Tensor, clip_ratio: float) -> PolicyLoss:
    """Computes the clipped surrogate policy loss.

    ``pg_loss = mean(max(-adv * ratio, -adv * clamp(ratio, 1 - clip, 1 + clip)))`` with
    ``ratio = exp(logp - logp_old)``.

    Args:
        logp: Log-probabilities of the taken actions under the current policy, shape [N].
        logp_old: Log-probabilities under the policy that collected the data, shape [N].
        adv: Advantages, shape [N] (already normalized if the caller wants that).
        clip_ratio: Clip range epsilon, e.g. 0.2.

    Returns:
        A :class:`PolicyLoss`; all terms are 0-dim tensors.
    """
    logratio = logp - logp_old
    ratio = logratio.exp()
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()
    with torch.no_grad():
        # The unbiased, always non-negative estimator (http://joschu.net/blog/kl-approx.html).
        approx_kl = ((ratio - 1.0) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_ratio).to(ratio.dtype).mean()
    return PolicyLoss(pg_loss, approx_kl, clipfrac)


def normalize_advantages(adv: Tensor, eps: float = 1e-8) -> Tensor:
    """Standardizes advantages: ``(adv - mean) / (std + eps)``, std with Bessel's correction.

    The PPO update applies it per minibatch when the advantage estimator asks for it.

    Args:
        adv: Advantages, shape [N] with N > 1.
        eps: Added to the standard deviation so a constant ``adv`` gives zeros, not NaN.

    Returns:
        The normalized advantages, shape [N].
    """
    return (adv - adv.mean()) / (adv.std() + eps)


def ppo_value_loss(
    values: Tensor,
    values_old: Tensor,
    returns: Tensor,
    clip_ratio: float | None,
    weight: Tensor | None = None,
) -> Tensor:
    """Computes the critic loss, ``0.5 * MSE``, optionally clipped around the old values.

    With ``clip_ratio`` the loss per sample is ``max((v - R)^2, (v_clip - R)^2)`` where
    ``v_clip = values_old + clamp(values - values_old, -clip, clip)`` (as in PPO2), so the
    value cannot gain by moving further than ``clip_ratio`` from where it was.

    Args:
        values: Current value predictions, shape [N].
        values_old: Value predictions made at collection time, shape [N]; unused when
            ``clip_ratio`` is None.
        returns: Value targets, shape [N].
        clip_ratio: Clip range for the value, or None for the plain loss.
        weight: Per-sample weights of the mean (a per-sequence ``loss_agg_mode``), [N];
            None: the plain mean.

    Returns:
        ``v_loss``, a scalar with gradient.
    """
    per_sample = (values - returns).square()
    if clip_ratio is not None:
        v_clipped = values_old + torch.clamp(values - values_old, -clip_ratio, clip_ratio)
        per_sample = torch.max(per_sample, (v_clipped - returns).square())
    return 0.5 * (per_sample.mean() if weight is None else (per_sample * weight).mean())


def entropy_loss(entropy: Tensor, weight: Tensor | None = None) -> Tensor:
    """Averages the policy entropy; the caller subtracts ``ent_coef * entropy_loss``.

    Args:
        entropy: Entropy of the action distribution per sample, shape [N].
        weight: Per-sample weights of the mean, [N]; None: the plain mean.

    Returns:
        The mean entropy, a scalar with gradient (a bonus: larger is more exploratory).
    """
    return entropy.mean() if weight is None else (entropy * weight).mean()


def explained_variance(y_pred: Tensor, y_true: Tensor) -> float:
    """Returns ``1 - Var(y_true - y_pred) / Var(y_true)``.

    1 is a perfect critic, 0 is no better than predicting the mean, negative is worse.

    Args:
        y_pred: Predictions (values), shape [N].
        y_true: Targets (returns), shape [N].

    Returns:
        The explained variance as a float, or ``nan`` when ``y_true`` is constant.
    """
    with torch.no_grad():
        var_y = torch.var(y_true, correction=0).item()
        if var_y == 0.0:
            return math.nan
        return 1.0 - torch.var(y_true - y_pred, correction=0).item() / var_y
