"""What one PPO update trains on: the segments each epoch visits and its minibatches.

:class:`~ding_lite.policy.ppo.update.PPOUpdate` runs the epochs; this module says which
segments an epoch visits (:class:`SegmentSampler`: shuffled, or drawn by priority) and what
one minibatch is (:func:`minibatches`). What a minibatch costs is
:mod:`~ding_lite.policy.ppo.terms`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import torch
from torch import Tensor

from ding_lite.rl_utils import is_weights, normalize_advantages, prio_beta, segment_probs
from ding_lite.utils.distributed import broadcast_
from ding_lite.utils.errors import ConfigError


class Minibatch(NamedTuple):
    """The samples of one gradient step (on this rank), each tensor with N rows.

    Attributes:
        obs: Observations, [N, *obs_shape].
        action: Actions taken, [N, *action_shape].
        logp: Their log-probabilities under the behaviour policy, [N].
        value: Values predicted at collection time, [N].
        ret: Value targets, [N].
        adv: Advantages, normalized over the whole minibatch if the estimator asks, then
            scaled by their segment's importance weight when segments are drawn by
            priority, [N].
        state: For a recurrent model, the state at the start of each of the minibatch's S
            segments, ``[S, state_size]`` (rows are the segments' steps, segment-major);
            None for a feed-forward model.
        episode_start: For a recurrent model, bool [N]: rows where an episode starts.
        logp_prox: Log-probabilities under the learner's policy as the update started, [N],
            for a proximal policy loss (``decoupled``); None otherwise.
        weight: Each step's weight in the loss's mean under a per-sequence
            ``loss_agg_mode`` (:func:`~ding_lite.rl_utils.loss_agg.agg_weights`; ``adv``
            is already scaled by it), [N]; None for ``token-mean``.
        teacher_action: A scripted kickstarting teacher's actions, [N, *action_shape];
            None without one.
    """

    obs: Tensor
    action: Tensor
    logp: Tensor
    value: Tensor
    ret: Tensor
    adv: Tensor
    state: Tensor | None = None
    episode_start: Tensor | None = None
    logp_prox: Tensor | None = None
    weight: Tensor | None = None
    teacher_action: Tensor | None = None


class SegmentSampler:
    """Which segments each epoch of one update visits, the same on every data-parallel rank.

    Uniform (``alpha == 0``): each epoch is a permutation of the segments, one
    ``torch.randperm`` and no other random draw. Prioritized (``alpha > 0``): each epoch
    draws ``(S // per_mb) * per_mb`` segments (as many minibatches as a shuffled epoch) with
    replacement by ``torch.multinomial`` from ``p = segment_probs(adv, horizon, alpha)``, and
    gives them the importance weights ``(S * p) ** -beta``, ``beta = prio_beta(beta0, alpha,
    progress)``, not divided by their maximum. Rank 0's draw is broadcast to the others.

    Args:
        adv: The batch's advantages (as stored, before any normalization), [B], B / horizon
            segments, segment-major.
        horizon: Steps per segment (``policy.learn.bptt_horizon``).
        mb_size: Samples per minibatch.
        ranks: Data-parallel ranks, each taking an equal part of every minibatch.
        alpha: ``policy.learn.prio_alpha``.
        beta0: ``policy.learn.prio_beta0``.
        progress: The fraction of the run done (iteration / planned iterations).
        device: Where the uniform permutation is drawn (the policy's device).

    Attributes:
        probs: Each segment's sampling probability, [S]; None when uniform.
        beta: The importance weights' exponent of this update.

    Raises:
        ConfigError: The batch is not whole segments, or a minibatch's segments do not split
            into ``ranks`` equal parts.
    """

    def __init__(
        self,
        adv: Tensor,
        horizon: int,
        mb_size: int,
        ranks: int,
        *,
        alpha: float,
        beta0: float,
        progress: float,
        device: torch.device,
    ) -> None:
        batch_size = adv.shape[0]
        if batch_size % horizon:
            raise ConfigError(
                f"a batch of {batch_size} samples is not whole segments of "
                f"policy.learn.bptt_horizon={horizon}"
            )
        if (mb_size // horizon) % ranks:
            raise ConfigError(
                f"policy.learn.batch_size: a minibatch of {mb_size // horizon} segments of "
                f"{horizon} steps does not split into {ranks} equal parts (one per learner rank)"
            )
        self.n_segments = batch_size // horizon
        self.per_mb = mb_size // horizon
        self.device = device
        self.probs = segment_probs(adv, horizon, alpha) if alpha > 0 else None
        self.beta = prio_beta(beta0, alpha, progress)
        self._drawn: list[Tensor] = []

    def epoch(self) -> tuple[Tensor, Tensor | None]:
        """Draws the next epoch's segments.

        Returns:
            ``(order, weights)``: segment indices [M] (for :func:`minibatches`) and their
            importance weights [M], None when uniform.
        """
        if self.probs is None:
            return broadcast_(torch.randperm(self.n_segments, device=self.device)), None
        draws = self.n_segments // self.per_mb * self.per_mb
        order = broadcast_(torch.multinomial(self.probs, draws, replacement=True))
        weights = is_weights(self.probs, order, self.beta)
        self._drawn.append(weights)
        return order, weights

    def info(self) -> dict[str, Any]:
        """When prioritized, ``{"prio_is_weight_mean": mean weight of every segment drawn so
        far, "priority_info": {"replay_buffer_idx": each segment's index in the batch
        (segment s is rows s * horizon on), "priority": its sampling probability}}`` (the
        learner's ``priority_info``, DI-engine's shape); ``{}`` when uniform (the stored
        update reference pins the learn info's keys of the uniform update)."""
        if not self._drawn or self.probs is None:
            return {}
        priority = self.probs.tolist()
        return {
            "prio_is_weight_mean": float(torch.cat(self._drawn).mean()),
            "priority_info": {
                "replay_buffer_idx": list(range(len(priority))),
                "priority": priority,
            },
        }


def minibatches(
    data: dict[str, Tensor],
    order: Tensor,
    mb_size: int,
    *,
    normalize: bool,
    rank: int = 0,
    ranks: int = 1,
    horizon: int = 1,
    weights: Tensor | None = None,
) -> Iterator[Minibatch]:
    """Cuts one epoch of a batch into minibatches of whole segments, and each into this
    rank's part.

    The batch's B rows are B / ``horizon`` segments of ``horizon`` consecutive steps of one
    env copy, segment-major (segment ``s`` is rows ``s * horizon`` to ``(s + 1) * horizon``;
    with ``horizon=1`` every row is a segment). Each minibatch takes the next
    ``mb_size / horizon`` segments of ``order``; a last partial one is dropped. Advantages
    are normalized over the whole minibatch (which every rank holds), multiplied by their
    segment's importance weight if ``weights`` are given, then rank ``r`` of ``ranks``
    keeps the r-th of ``ranks`` contiguous parts (whole segments).

    Args:
        data: The batch: ``obs``, ``action``, ``logp``, ``value``, ``adv``, ``ret``, each
            with B rows; for a recurrent model also ``episode_start`` (B rows) and
            ``core_state`` (one row per segment); for a proximal loss ``logp_prox``; for a
            per-sequence ``loss_agg_mode`` ``loss_weight`` (B rows; the advantages are
            multiplied by it after the normalization, as by importance weights).
        order: Segment indices in ``range(B / horizon)``, the same on every rank: a
            permutation, or segments drawn by priority (:meth:`SegmentSampler.epoch`).
        mb_size: Samples per minibatch, a multiple of ``horizon``, whose segments are a
            multiple of ``ranks``.
        normalize: Normalize advantages per minibatch (:func:`normalize_advantages`).
        rank: This process's rank in the data-parallel group.
        ranks: The group's size.
        horizon: Steps per segment (``policy.learn.bptt_horizon``).
        weights: Importance weights of ``order``'s segments, or None (no weighting).

    Yields:
        :class:`Minibatch` of ``mb_size // ranks`` samples each.
    """
    per_mb = mb_size // horizon  # segments per minibatch
    if per_mb == 0:  # an empty batch (episode-level estimators may have none ready)
        return
    part = per_mb // ranks  # of them on each rank
    steps = torch.arange(horizon, device=order.device)
    for start in range(0, order.shape[0] - per_mb + 1, per_mb):
        segs = order[start : start + per_mb]
        mb_inds = segs if horizon == 1 else (segs.unsqueeze(1) * horizon + steps).flatten()
        mb_adv = data["adv"][mb_inds]
        if normalize:
            mb_adv = normalize_advantages(mb_adv)
        if weights is not None:
            mb_w = weights[start : start + per_mb]
            mb_adv = mb_adv * (mb_w if horizon == 1 else mb_w.repeat_interleave(horizon))
        agg_w = data["loss_weight"][mb_inds] if "loss_weight" in data else None
        if agg_w is not None:
            mb_adv = mb_adv * agg_w
        if ranks > 1:
            rows = part * horizon
            segs = segs[rank * part : (rank + 1) * part]
            mb_inds = mb_inds[rank * rows : (rank + 1) * rows]
            mb_adv = mb_adv[rank * rows : (rank + 1) * rows]
            agg_w = None if agg_w is None else agg_w[rank * rows : (rank + 1) * rows]
        recurrent = "core_state" in data
        yield Minibatch(
            obs=data["obs"][mb_inds],
            action=data["action"][mb_inds],
            logp=data["logp"][mb_inds],
            value=data["value"][mb_inds],
            ret=data["ret"][mb_inds],
            adv=mb_adv,
            state=data["core_state"][segs] if recurrent else None,
            episode_start=data["episode_start"][mb_inds] if recurrent else None,
            logp_prox=data["logp_prox"][mb_inds] if "logp_prox" in data else None,
            weight=agg_w,
            teacher_action=data["teacher_action"][mb_inds] if "teacher_action" in data else None,
        )
