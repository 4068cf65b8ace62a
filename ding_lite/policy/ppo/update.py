"""The PPO update, top to bottom: epochs of minibatch steps on one batch.

Per update: set the learning rate, draw each epoch's segments, and for every minibatch run
the model, sum the registered loss terms (:mod:`~ding_lite.policy.ppo.terms`), step the
optimizer (every ``grad_accum_steps`` minibatches), stop the epochs early past
``target_kl``; then move the schedules on and return the means to log.

Data-parallel (N ranks in a torch.distributed group, each holding the whole batch): every
rank takes rank 0's minibatch order, and of each minibatch of m samples rank r computes on
the r-th of N contiguous parts of m / N. The gradients are averaged over the ranks before
each step, so every rank takes the step one process would take on the whole minibatch. The
minibatch's advantage mean and std come from the whole minibatch (which every rank holds:
the values an all-reduce would give), and the KL early stop and the logged means are
averaged over the ranks.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import Tensor, nn

from ding_lite.policy.ppo.batches import SegmentSampler, minibatches
from ding_lite.policy.ppo.settings import PPOSettings
from ding_lite.policy.ppo.terms import (
    MinibatchPass,
    TermWeights,
    logged,
    loss_terms,
    mean_terms,
    total_loss,
)
from ding_lite.rl_utils import PolicyLossFn, explained_variance
from ding_lite.rl_utils.loss_agg import agg_weights
from ding_lite.utils.distributed import all_mean_, average_gradients, world

Batch = dict[str, Tensor]


class PPOUpdate:
    """The update of one policy's model, and what it carries from one update to the next
    (iteration, KL coefficient, skipped steps, the optimizer).

    Args:
        model: The actor-critic to train.
        settings: The policy's settings.
        policy_loss: The registered policy loss of ``settings.policy_loss``.
        normalize: Normalize advantages per minibatch (the advantage estimator's choice).
        ref_model: The reference policy of the KL penalty, or None.
        total_iters: Iterations the run is planned for (the anneals, the priority
            exponent's schedule); None: no plan.
        device: Where the model lives (uniform minibatch orders are drawn there).
    """

    def __init__(
        self,
        model: nn.Module,
        settings: PPOSettings,
        *,
        policy_loss: PolicyLossFn,
        normalize: bool,
        ref_model: nn.Module | None,
        total_iters: int | None,
        device: torch.device,
    ) -> None:
        self.model, self.settings = model, settings
        self.policy_loss, self.normalize = policy_loss, normalize
        self.ref_model, self.total_iters = ref_model, total_iters
        self.device = device
        self.iteration = 0
        self.kl_coef = float(settings.kl_coef)
        self.skipped_steps = 0
        self.skipped_in_a_row = 0  # reset by every applied step; too many: diverged
        self._optimizer: torch.optim.Optimizer | None = None

    @property
    def built_optimizer(self) -> bool:
        """Whether :attr:`optimizer` was built (acting never builds one)."""
        return self._optimizer is not None

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """Adam (or AdamW) over the model's parameters, built on first use.

        Collectors and evaluators never update, so they never build one: building the first
        optimizer of a process makes torch import ``torch._dynamo``, about 2 s of CPU.
        """
        if self._optimizer is None:
            s = self.settings
            opt_cls = torch.optim.AdamW if s.optimizer == "adamw" else torch.optim.Adam
            # foreach: one multi-tensor op per step, the same numbers, ~5% faster on CPU.
            self._optimizer = opt_cls(
                self.model.parameters(),
                lr=s.learning_rate,
                eps=s.adam_eps,
                weight_decay=s.weight_decay,
                foreach=True,
            )
        return self._optimizer

    def annealed(self, value: float, anneal: bool) -> float:
        """``value``, or with ``anneal`` its linear decay to 0 over the planned iterations."""
        if not anneal or not self.total_iters:
            return value
        return value * max(0.0, 1.0 - self.iteration / self.total_iters)

    def __call__(self, b: Batch) -> dict[str, Any]:
        """One update on a prepared batch ``b`` (``obs``, ``action``, ``logp``, ``value``,
        ``adv``, ``ret``...); returns the scalars to log: the terms' means
        (``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``, ``clipfrac``,
        ``kl_ref``, ``losses/<name>``), the batch's statistics, ``grad_norm``,
        ``learning_rate``, ``minibatches``, ``skipped_steps``, ``diverged`` and, with
        ``prio_alpha > 0``, ``prio_is_weight_mean`` and ``priority_info`` (each segment's
        index and sampling probability: lists, not scalars)."""
        s = self.settings
        lr = self.annealed(s.learning_rate, s.lr_anneal)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        weights = TermWeights(
            s,
            value_only=self.iteration < s.value_warmup_iters,
            entropy_weight=self.annealed(s.entropy_weight, s.entropy_anneal),
            kl_coef=self.kl_coef,
        )
        if "seq_len" in b:  # a per-sequence loss_agg_mode: each step's weight in the means
            norm_len = s.bptt_horizon if s.bptt_horizon > 1 else None
            agg = agg_weights(b["seq_len"], s.loss_agg_mode, norm_len)
            b = b if agg is None else {**b, "loss_weight": agg}
        mb_size = min(s.batch_size, b["obs"].shape[0])
        rank, ranks = world()
        sampler = SegmentSampler(  # checks the segment arithmetic
            b["adv"],
            s.bptt_horizon,
            mb_size,
            ranks,
            alpha=s.prio_alpha,
            beta0=s.prio_beta0,
            # A run without a planned length stays at progress 0 (beta = prio_beta0).
            progress=self.iteration / self.total_iters if self.total_iters else 0.0,
            device=self.device,
        )
        kept, grad_norms = self._epochs(b, sampler, mb_size, weights, rank, ranks)
        means = mean_terms(kept)
        self._advance_schedules()
        norms = torch.stack(grad_norms) if grad_norms else torch.zeros(1)
        return {
            **logged(means),
            "kl_coef": weights.kl_coef,
            # explained_variance, data/advantage_mean, data/advantage_std
            **batch_stats(b, critic=getattr(self.model, "critic", True)),
            "grad_norm": float(norms[torch.isfinite(norms)].mean()) if len(norms) else 0.0,
            "learning_rate": lr,
            "minibatches": float(len(kept)),
            "skipped_steps": float(self.skipped_steps),
            # 1.0 once max_skipped_steps steps in a row were skipped: the learner stops.
            "diverged": float(self.skipped_in_a_row >= s.max_skipped_steps),
            **sampler.info(),
        }

    def _epochs(
        self,
        b: Batch,
        sampler: SegmentSampler,
        mb_size: int,
        weights: TermWeights,
        rank: int,
        ranks: int,
    ) -> tuple[list[dict[str, Tensor]], list[Tensor]]:
        """The epochs of minibatch steps (this process is ``rank`` of ``ranks``); returns
        each minibatch's detached terms and each optimizer step's gradient norm."""
        s = self.settings
        ref_model = self.ref_model if weights.kl_coef > 0 else None
        kept: list[dict[str, Tensor]] = []
        grad_norms: list[Tensor] = []
        n_backward = 0
        self.model.train()
        for _epoch in range(s.n_epochs):
            b_inds, is_weights = sampler.epoch()
            for mb in minibatches(
                b,
                b_inds,
                mb_size,
                normalize=self.normalize,
                rank=rank,
                ranks=ranks,
                horizon=s.bptt_horizon,
                weights=is_weights,
            ):
                terms = loss_terms(
                    MinibatchPass(
                        self.model,
                        mb,
                        clip=s.clip,
                        v_clip=s.v_clip,
                        ref_model=ref_model,
                        policy_loss=self.policy_loss,
                        kl_estimator=s.kl_estimator,
                    )
                )
                loss = total_loss(terms, weights)
                (loss / s.grad_accum_steps).backward()
                n_backward += 1
                kept.append({name: term.detach() for name, term in terms.items()})
                if n_backward % s.grad_accum_steps == 0:
                    grad_norms.append(self._optimizer_step())
            if n_backward % s.grad_accum_steps:  # a leftover accumulated gradient
                grad_norms.append(self._optimizer_step())
                n_backward = 0
            if s.target_kl is not None and kept:
                approx_kl = all_mean_(kept[-1]["approx_kl"].clone()).item()
                if approx_kl > s.target_kl:
                    break
        return kept, grad_norms

    def _optimizer_step(self) -> Tensor:
        """Clips and applies the accumulated gradient; skips it (counted) if not finite."""
        max_norm = self.settings.grad_clip_norm
        average_gradients(self.model.parameters())  # data-parallel ranks: the mean gradient
        grad_norm = nn.utils.clip_grad_norm_(
            self.model.parameters(), max_norm if max_norm is not None else math.inf
        )
        if torch.isfinite(grad_norm):
            self.optimizer.step()
            self.skipped_in_a_row = 0
        else:
            self.skipped_steps += 1
            self.skipped_in_a_row += 1
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm.detach()

    def _advance_schedules(self) -> None:
        """After an update: the next iteration, the decayed KL coefficient, and every
        ``kl_ref_update_interval`` iterations the policy as the new reference."""
        s = self.settings
        self.iteration += 1
        self.kl_coef *= s.kl_coef_decay
        interval = s.kl_ref_update_interval
        if self.ref_model is not None and interval and self.iteration % interval == 0:
            self.ref_model.load_state_dict(self.model.state_dict())

    def state_dict(self) -> dict[str, Any]:
        """The optimizer, the schedule, the KL coefficient and the skipped steps (as the
        policy's checkpoint has always stored them) and the reference model, if any."""
        state: dict[str, Any] = {
            "optimizer": self.optimizer.state_dict(),
            "schedule": {"iter": self.iteration, "total_iters": self.total_iters or 0},
            "kl_coef": self.kl_coef,
            "skipped_steps": self.skipped_steps,
        }
        if self.ref_model is not None:
            state["ref_model"] = self.ref_model.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` stored."""
        # Optimizer.load_state_dict keeps the given tensors; copy them so a policy loaded
        # from another live policy's state does not share its Adam moments.
        self.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
        self.iteration = int(state["schedule"]["iter"])
        self.kl_coef = float(state["kl_coef"])
        self.skipped_steps = int(state.get("skipped_steps", 0))  # a checkpoint's, not config
        if self.ref_model is not None and "ref_model" in state:
            self.ref_model.load_state_dict(state["ref_model"])


def batch_stats(data: Batch, critic: bool = True) -> dict[str, float]:
    """What the update logs of the batch itself: the critic's ``explained_variance`` of the
    value targets (NaN without a critic), and the advantages' mean and standard deviation
    as the estimator gave them (before any per-minibatch normalization), as
    ``data/advantage_mean`` and ``data/advantage_std``; all NaN for an empty batch."""
    adv = data["adv"]
    if not adv.numel():
        return dict.fromkeys(
            ("explained_variance", "data/advantage_mean", "data/advantage_std"), math.nan
        )
    return {
        "explained_variance": explained_variance(data["value"], data["ret"])
        if critic
        else math.nan,
        "data/advantage_mean": float(adv.mean()),
        "data/advantage_std": float(adv.std()) if adv.numel() > 1 else 0.0,
    }
