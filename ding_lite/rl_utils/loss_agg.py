"""How a minibatch's per-step losses are aggregated into one number (verl's ``loss_agg_mode``).

A *sequence* is a run of consecutive steps of one env copy (and agent) within one episode:
with a step-level estimator (GAE, V-trace) a BPTT segment (``policy.learn.bptt_horizon``
steps) cut where an episode starts, with an episode-level one (REINFORCE++, GRPO, RLOO) a
whole episode. Over a batch of ``N`` steps in ``S`` sequences, step ``i`` in sequence
``s(i)`` of ``|s|`` steps:

- ``token-mean``: every step weighs the same, ``mean_i l_i`` (the default; PPO's usual mean);
- ``seq-mean-token-mean``: each sequence's mean, then their mean, ``1/S sum_s mean_{i in s}
  l_i``: a short sequence weighs as much as a long one;
- ``seq-mean-token-sum``: each sequence's sum, then their mean, ``1/S sum_s sum_{i in s}
  l_i``: a long sequence weighs more (the loss grows with length);
- ``seq-mean-token-sum-norm``: each sequence's sum divided by one constant length ``L`` (the
  segment length, or the batch's longest episode), then their mean (Dr. GRPO's constant
  normalizer): no length bias either way.

Each mode is a weight per step, ``w_i`` with ``mean_i(w_i * l_i)`` the batch's loss
(:func:`agg_weights`); minibatches drawn from the batch weigh their steps by it, so that
the minibatches' mean over an epoch is the batch's aggregate.
"""

from __future__ import annotations

import torch
from torch import Tensor

TOKEN_MEAN = "token-mean"
LOSS_AGG_MODES = (
    TOKEN_MEAN,
    "seq-mean-token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-sum-norm",
)


def sequence_lengths(starts: Tensor) -> Tensor:
    """Each step's sequence length, from where sequences start.

    Args:
        starts: bool [N], True on the first step of each sequence; the steps of a sequence
            are consecutive rows (``starts[0]`` is taken as a start).

    Returns:
        float [N]: the length of the sequence each step belongs to.
    """
    if not starts.numel():
        return starts.float()
    starts = starts.clone()
    starts[0] = True
    seq = torch.cumsum(starts.long(), 0) - 1
    return torch.bincount(seq).float()[seq]


def lengths_by_key(keys: Tensor) -> Tensor:
    """Each step's sequence length when a sequence is every step sharing a key (int64 [N],
    steps need not be consecutive); float [N]."""
    if not keys.numel():
        return keys.float()
    _, inverse, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    return counts.float()[inverse]


def agg_weights(seq_len: Tensor, mode: str, norm_len: float | None = None) -> Tensor | None:
    """The per-step weights of ``mode`` over a batch (see the module docstring).

    Args:
        seq_len: float [N], each step's sequence length (:func:`sequence_lengths`).
        mode: One of :data:`LOSS_AGG_MODES`.
        norm_len: ``seq-mean-token-sum-norm``'s constant ``L``; None: the longest sequence.

    Returns:
        float [N] weights, or None for ``token-mean`` (every weight 1).

    Raises:
        ValueError: an unknown mode.
    """
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"unknown loss_agg_mode {mode!r}; known: {', '.join(LOSS_AGG_MODES)}")
    if mode == TOKEN_MEAN or not seq_len.numel():
        return None
    n = float(seq_len.numel())
    sequences = float((1.0 / seq_len).sum())  # each sequence's steps add up to 1
    if mode == "seq-mean-token-mean":
        return n / (sequences * seq_len)
    per_sequence_sum = torch.full_like(seq_len, n / sequences)
    if mode == "seq-mean-token-sum":
        return per_sequence_sum
    length = float(seq_len.max()) if norm_len is None else float(norm_len)
    return per_sequence_sum / length


def weighted_mean(x: Tensor, weight: Tensor | None) -> Tensor:
    """``mean(x * weight)``; the plain mean without weights."""
    return x.mean() if weight is None else (x * weight).mean()
