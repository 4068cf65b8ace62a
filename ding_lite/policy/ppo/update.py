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
from torch import Tensor

from ding_lite.model import ActorCritic
from ding_lite.policy.ppo.adam import Adam
from ding_lite.policy.ppo.batches import SegmentSampler, minibatches
from ding_lite.policy.ppo.kickstart import Kickstart
from ding_lite.policy.ppo.optimizers import Optimizers
from ding_lite.policy.ppo.settings import PPOSettings
from ding_lite.policy.ppo.terms import (
    ACTOR,
    ALL,
    CRITIC,
    CRITIC_TERMS,
    MinibatchPass,
    TermWeights,
    logged,
    loss_terms,
    mean_terms,
    total_loss,
)
from ding_lite.rl_utils import PolicyLossFn, explained_variance
from ding_lite.rl_utils.loss_agg import agg_weights
from ding_lite.utils.distributed import all_mean_, world

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
        model: ActorCritic,
        settings: PPOSettings,
        *,
        policy_loss: PolicyLossFn,
        normalize: bool,
        ref_model: ActorCritic | None,
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
        self._optimizers: Optimizers | None = None
        #: The kickstarting teacher (``policy.learn.kickstart``), or None.
        self.kickstart: Kickstart | None = None

    @property
    def built_optimizer(self) -> bool:
        """Whether the optimizers were built (acting never builds one)."""
        return self._optimizers is not None

    @property
    def optimizers(self) -> Optimizers:
        """Adam (or AdamW): one over the model's parameters, or with
        ``policy.learn.critic.optimizer=separate`` the actor's and the critic's; built on
        first use.

        Collectors and evaluators never update, so they never build one.
        """
        if self._optimizers is None:
            s = self.settings
            separate = s.critic["optimizer"] == "separate"
            critic_lr = s.critic["learning_rate"]
            self._optimizers = Optimizers(
                self.model,
                kind=s.optimizer,
                lr=s.learning_rate,
                eps=s.adam_eps,
                weight_decay=s.weight_decay,
                critic_lr=(s.learning_rate if critic_lr is None else critic_lr)
                if separate
                else None,
            )
        return self._optimizers

    @property
    def optimizer(self) -> Adam:
        """The optimizer over the model's parameters (the actor's, with a separate
        critic's)."""
        return self.optimizers.actor

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
        self.optimizers.set_lr(lr)
        ks = self.kickstart
        pull = ks.factor(self.iteration) if ks is not None else 0.0
        weights = TermWeights(
            s,
            value_only=self.iteration < s.value_warmup_iters,
            entropy_weight=self.annealed(s.entropy_weight, s.entropy_anneal),
            kl_coef=self.kl_coef,
            kickstart_coef=ks.coef * pull if ks is not None else 0.0,
            kickstart_value_coef=ks.value_coef * pull if ks is not None else 0.0,
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
        if s.critic["order"] == "critic_first" and self.optimizers.critic is not None:
            # verl's order: the critic's epochs first, then the actor's on the same batch
            # (none during the value warm-up).
            kept, grad_norms = self._epochs(b, sampler, mb_size, weights, rank, ranks, CRITIC)
            means = mean_terms(kept)
            if not weights.value_only:
                kept, actor_norms = self._epochs(b, sampler, mb_size, weights, rank, ranks, ACTOR)
                grad_norms += actor_norms
                critic_means, means = means, mean_terms(kept)
                means.update({k: critic_means[k] for k in CRITIC_TERMS if k in critic_means})
        else:
            kept, grad_norms = self._epochs(b, sampler, mb_size, weights, rank, ranks)
            means = mean_terms(kept)
        self._advance_schedules()
        norms = torch.stack(grad_norms) if grad_norms else torch.zeros(1)
        kickstart = {} if ks is None else {"charts/kickstart_coef": weights.kickstart_coef}
        return {
            **logged(means),
            **kickstart,
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
        phase: str = ALL,
    ) -> tuple[list[dict[str, Tensor]], list[Tensor]]:
        """The epochs of minibatch steps (this process is ``rank`` of ``ranks``) of one
        phase: every loss term stepping every optimizer (``all``), or with separate
        optimizers the critic's terms stepping the critic's (``critic``) or the others
        stepping the actor's (``actor``); returns each minibatch's detached terms and each
        optimizer step's gradient norm."""
        s = self.settings
        opts = self.optimizers
        which = opts.all()
        if phase == ACTOR:
            which = [opts.actor]
        elif phase == CRITIC and opts.critic is not None:
            which = [opts.critic]
        ref_model = self.ref_model if weights.kl_coef > 0 else None
        pulled = weights.kickstart_coef > 0 or weights.kickstart_value_coef > 0
        kickstart = self.kickstart if pulled else None
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
                        kickstart=kickstart,
                    )
                )
                loss = total_loss(terms, weights, phase)
                (loss / s.grad_accum_steps).backward()
                n_backward += 1
                kept.append({name: term.detach() for name, term in terms.items()})
                if n_backward % s.grad_accum_steps == 0:
                    grad_norms.append(self._optimizer_step(which))
            if n_backward % s.grad_accum_steps:  # a leftover accumulated gradient
                grad_norms.append(self._optimizer_step(which))
                n_backward = 0
            if s.target_kl is not None and kept and phase != CRITIC:
                approx_kl = all_mean_(kept[-1]["approx_kl"].clone()).item()
                if approx_kl > s.target_kl:
                    break
        return kept, grad_norms

    def _optimizer_step(self, which: list[Adam]) -> Tensor:
        """Clips and applies the accumulated gradient with ``which`` optimizers; skips it
        (counted) if not finite."""
        grad_norm = self.optimizers.step(which, self.settings.grad_clip_norm)
        if torch.isfinite(grad_norm):
            self.skipped_in_a_row = 0
        else:
            self.skipped_steps += 1
            self.skipped_in_a_row += 1
        return grad_norm

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
            **self.optimizers.state_dict(),
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
        self.optimizers.load_state_dict(
            copy.deepcopy({k: v for k, v in state.items() if k.endswith("optimizer")})
        )
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
