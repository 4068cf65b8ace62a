"""Prioritized segment sampling (Schaul et al., 2016, applied to PPO segments).

A segment is drawn with probability ``p_s = P_s / sum(P)``, ``P_s = (sum over the
segment's steps of |adv|) ** alpha``, and its advantages are scaled by the importance
weight ``w_s = (S * p_s) ** -beta`` (S segments), whose exponent is annealed from
``beta0`` towards 1 over the run. With ``alpha = 0`` every ``p_s = 1 / S`` and every
``w_s = 1``. The weights are not divided by their maximum (Schaul et al. do that; the
trainer ding_lite follows here does not): a segment drawn more often than uniformly gets a
weight below 1, one drawn less often a weight above 1.
"""

from __future__ import annotations

import torch
from torch import Tensor


def prio_beta(beta0: float, alpha: float, progress: float) -> float:
    """The importance-weight exponent at a point of the run.

    ``beta = beta0 + (1 - beta0) * alpha * progress``, with ``progress`` clamped to [0, 1]
    and ``beta`` to at most 1 (it exceeds 1 only for ``alpha > 1``, where the unclamped
    formula would over-correct).

    Args:
        beta0: The exponent at the start of the run, in [0, 1].
        alpha: The priority exponent (``policy.learn.prio_alpha``), >= 0.
        progress: The fraction of the run done, ``iteration / total iterations``.

    Returns:
        The exponent, in [beta0, 1].
    """
    progress = min(max(progress, 0.0), 1.0)
    return min(1.0, beta0 + (1.0 - beta0) * alpha * progress)


def segment_probs(adv: Tensor, horizon: int, alpha: float) -> Tensor:
    """Sampling probabilities of segments from their advantage magnitude.

    ``p_s = P_s / sum(P)`` with ``P_s = (sum_t |adv[s * horizon + t]|) ** alpha``. A
    segment whose advantages are all 0 has ``p_s = 0`` for ``alpha > 0``; if every segment
    has, the probabilities are uniform.

    Args:
        adv: Advantages, shape [S * horizon], segment-major (segment ``s`` is rows
            ``s * horizon`` to ``(s + 1) * horizon - 1``).
        horizon: Steps per segment.
        alpha: The priority exponent, >= 0 (0 gives uniform probabilities).

    Returns:
        The probabilities, shape [S], summing to 1.
    """
    prio = adv.detach().reshape(-1, horizon).abs().sum(1).pow(alpha)
    total = prio.sum()
    # where, not an if: no device-to-host sync on CUDA.
    return torch.where(total > 0, prio / total, torch.full_like(prio, 1.0 / prio.shape[0]))


def is_weights(probs: Tensor, idx: Tensor, beta: float) -> Tensor:
    """Importance weights of drawn segments: ``w = (S * probs[idx]) ** -beta``.

    Not normalized by their maximum (see the module's docstring).

    Args:
        probs: Sampling probabilities of all S segments, shape [S].
        idx: The drawn segments, shape [M], each with ``probs[idx] > 0``.
        beta: The exponent (:func:`prio_beta`).

    Returns:
        The weights, shape [M].
    """
    return (probs.shape[0] * probs[idx]).pow(-beta)
