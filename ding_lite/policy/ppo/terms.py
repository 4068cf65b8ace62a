"""The PPO loss's terms, each registered once: its name, how a minibatch computes it, its
weight in the summed loss (or none: a statistic), and the name it is logged under.

The update minimizes the weighted sum of the registered loss terms, in registration order::

    loss = pg_loss - entropy_weight * entropy + value_weight * v_loss + kl_coef * kl_ref

(only ``value_weight * v_loss`` and the KL penalty during value warm-up), and logs the mean
of every term and statistic over the update's minibatches. A new term is one
:func:`register_loss_term` call::

    register_loss_term(
        "l2_actions",
        lambda p: p.dist.mean.square().mean(),  # p: the minibatch's MinibatchPass
        weight=lambda w: 0.01,                  # w: the update's TermWeights
    )

and is summed and logged (``losses/l2_actions``) from the next update on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ding_lite.model import ActorCritic
from ding_lite.policy.ppo.batches import Minibatch
from ding_lite.policy.ppo.kickstart import Kickstart, kickstart_losses
from ding_lite.policy.ppo.settings import PPOSettings
from ding_lite.rl_utils import ClipRanges, PolicyLossFn, entropy_loss, ppo_value_loss
from ding_lite.rl_utils.kl_estimators import FULL, get_kl_estimator
from ding_lite.rl_utils.loss_agg import weighted_mean
from ding_lite.rl_utils.policy_loss import approx_kl
from ding_lite.utils.distributed import all_mean_
from ding_lite.utils.registry import Registry


@dataclass(frozen=True)
class TermWeights:
    """What a loss term's weight may depend on, for one update.

    Attributes:
        settings: The policy's settings (``value_weight``, ...).
        value_only: This update trains the value function only (``value_warmup_iters``).
        entropy_weight: ``entropy_weight``, annealed if ``entropy_anneal``.
        kl_coef: The KL penalty's coefficient as ``kl_coef_decay`` left it.
        kickstart_coef, kickstart_value_coef: Kickstarting's weights as its decay left them
            (0: no teacher, or its pull has ended).
    """

    settings: PPOSettings
    value_only: bool
    entropy_weight: float
    kl_coef: float
    kickstart_coef: float = 0.0
    kickstart_value_coef: float = 0.0


class MinibatchPass:
    """One minibatch through the current model and PPO's quantities on it: what every term
    is computed from.

    The quantities are computed here, in this order, whichever terms are registered: the
    order in which autograd nodes are made decides the order in which backward adds up
    gradients, and so the update's last bits.

    Args:
        model: The actor-critic; ``model(obs)`` returns ``(dist, value)`` (a recurrent one
            takes the minibatch's ``state`` and ``episode_start`` too).
        mb: The minibatch.
        clip: The ratio's clip settings.
        v_clip: The value loss's clip range around the values predicted at collection
            time, or None for the plain loss.
        ref_model: The reference policy of the KL penalty (its ``get_dist``), or None.
        policy_loss: A registered policy loss (``ding_lite.rl_utils.policy_loss``).
        kl_estimator: How ``kl_ref`` is computed: ``"full"``, the exact KL between the
            action distributions, or a registered estimator from the log-probs of the
            minibatch's actions (``ding_lite.rl_utils.kl_estimators``).
        kickstart: The teacher while its pull lasts (:mod:`~ding_lite.policy.ppo.
            kickstart`), or None.

    Attributes:
        dist, newvalue: The model's action distribution and values, [N].
        newlogprob: Log-probabilities of the minibatch's actions, [N], with gradient.
        pg_loss: The policy loss, with gradient.
        approx_kl, clipfrac: Its KL estimate and clip fraction, detached (NaN clipfrac for
            a loss that reports none).
        metrics: The policy loss's other named metrics, detached (``clipfrac_lower``...).
        v_loss: The critic loss, ``0.5 * MSE`` (clipped with ``v_clip``), with gradient; 0
            without a value head.
        kl_ref: Mean KL(current || reference policy) as ``kl_estimator`` has it, with
            gradient; 0 without a reference.
        entropy: Mean entropy of the action distribution, with gradient.
        kickstart, kickstart_value: KL(teacher || policy) and the squared value gap to the
            teacher's, with gradient; None without a teacher.

    The means of ``v_loss``, ``kl_ref`` and ``entropy`` are weighted by the minibatch's
    ``weight`` under a per-sequence ``loss_agg_mode`` (the policy loss through its
    advantages, which carry the weights); ``approx_kl`` and ``clipfrac`` stay plain means.
    """

    def __init__(
        self,
        model: ActorCritic,
        mb: Minibatch,
        *,
        clip: ClipRanges,
        v_clip: float | None,
        ref_model: ActorCritic | None,
        policy_loss: PolicyLossFn,
        kl_estimator: str = FULL,
        kickstart: Kickstart | None = None,
    ) -> None:
        self.mb, self.v_clip, self.ref_model = mb, v_clip, ref_model
        self.memory = () if mb.state is None else (mb.state, mb.episode_start)
        self.critic = bool(getattr(model, "critic", True))  # the model's, not a config key
        self.dist, self.newvalue = model(mb.obs, *self.memory)
        self.newlogprob = self.dist.log_prob(mb.action)
        if mb.logp_prox is None:
            self.pg_loss, metrics = policy_loss(self.newlogprob, mb.logp, mb.adv, clip)
        else:  # a proximal loss (decoupled): clipped around the learner's starting policy
            self.pg_loss, metrics = policy_loss(
                self.newlogprob, mb.logp, mb.adv, clip, logp_prox=mb.logp_prox
            )
        metrics = dict(metrics)
        kl = metrics.pop("approx_kl", None)
        self.approx_kl = approx_kl(self.newlogprob - mb.logp) if kl is None else kl
        clipfrac = metrics.pop("clipfrac", None)
        if clipfrac is None:
            clipfrac = torch.full((), math.nan, device=self.approx_kl.device)
        self.clipfrac = clipfrac
        self.metrics = {name: value.detach() for name, value in metrics.items()}
        device = self.newvalue.device
        if self.critic:
            self.v_loss = ppo_value_loss(self.newvalue, mb.value, mb.ret, v_clip, mb.weight)
        else:  # no value head: nothing to fit
            self.v_loss = torch.zeros((), device=device)
        self.kl_ref = torch.zeros((), device=device)
        if ref_model is not None:
            with torch.no_grad():
                ref_dist = ref_model.get_dist(mb.obs, *self.memory)
            if kl_estimator == FULL:
                kl = self.dist.kl(ref_dist)
            else:
                estimate = get_kl_estimator(kl_estimator)
                kl = estimate(self.newlogprob, ref_dist.log_prob(mb.action))
            self.kl_ref = weighted_mean(kl, mb.weight)
        self.entropy = entropy_loss(self.dist.entropy(), mb.weight)
        self.kickstart: Tensor | None = None
        self.kickstart_value: Tensor | None = None
        if kickstart is not None:
            self.kickstart, self.kickstart_value = kickstart_losses(
                kickstart,
                mb.obs,
                self.dist,
                self.newvalue,
                getattr(model, "obs_rms", None),  # the model's, not a config key
                mb.weight,
                mb.teacher_action,
            )


@dataclass(frozen=True)
class LossTerm:
    """One registered term (see :func:`register_loss_term`)."""

    name: str
    compute: Callable[[MinibatchPass], Tensor | None]
    weight: Callable[[TermWeights], float | None] | None
    log_as: str

    @property
    def is_loss(self) -> bool:
        """Summed into the loss (else a statistic, logged only)."""
        return self.weight is not None


LOSS_TERM_REGISTRY: Registry[LossTerm] = Registry("loss term")


def register_loss_term(
    name: str,
    compute: Callable[[MinibatchPass], Tensor | None],
    *,
    weight: Callable[[TermWeights], float | None] | None = None,
    log_as: str | None = None,
    force: bool = False,
) -> LossTerm:
    """Registers a term of the PPO loss, or a statistic logged beside it.

    Args:
        name: The term's name (a key of :func:`loss_terms`'s result).
        compute: The term of one minibatch, a 0-dim tensor (with gradient for a loss term),
            or None where it is off (neither summed nor logged).
        weight: Its weight in the summed loss for an update, or None from it to leave it
            out of that update's sum; omitted, the term is a statistic (logged, not summed).
        log_as: The name of its mean in the learn info (default ``losses/<name>``).
        force: Replace a term registered under ``name`` (it keeps its place in the sum).

    Returns:
        The :class:`LossTerm`.

    Raises:
        RegistryError: ``name`` is taken and ``force`` is False, or ``name`` is empty.
    """
    term = LossTerm(name, compute, weight, log_as or f"losses/{name}")
    return LOSS_TERM_REGISTRY.register(name, term, force=force)


def unregister_loss_term(name: str) -> LossTerm:
    """Removes a registered term; returns it.

    Raises:
        RegistryError: ``name`` is unknown.
    """
    return LOSS_TERM_REGISTRY.unregister(name)


# The built-in terms, in the order of the sum (reordering them would change its last bits).
register_loss_term(
    "pg_loss",
    lambda p: p.pg_loss,
    weight=lambda w: None if w.value_only else 1.0,
    log_as="policy_loss",
)
register_loss_term(
    "entropy",  # a bonus: subtracted
    lambda p: p.entropy,
    weight=lambda w: None if w.value_only else -w.entropy_weight,
    log_as="entropy",
)
register_loss_term(
    "v_loss", lambda p: p.v_loss, weight=lambda w: w.settings.value_weight, log_as="value_loss"
)
register_loss_term(
    "kl_ref",
    lambda p: p.kl_ref,
    weight=lambda w: w.kl_coef if w.kl_coef > 0 else None,
    log_as="kl_ref",
)
register_loss_term(
    "kickstart",  # None (left out) without a teacher
    lambda p: p.kickstart,
    weight=lambda w: None if w.value_only or w.kickstart_coef <= 0 else w.kickstart_coef,
)
register_loss_term(
    "kickstart_value",
    lambda p: p.kickstart_value,
    weight=lambda w: w.kickstart_value_coef if w.kickstart_value_coef > 0 else None,
)
register_loss_term("approx_kl", lambda p: p.approx_kl, log_as="approx_kl")  # steers target_kl
register_loss_term("clipfrac", lambda p: p.clipfrac, log_as="clipfrac")

#: The update's phases: every term stepping every optimizer, or with separate optimizers
#: (``policy.learn.critic``) the critic's terms stepping the critic's, then the others the
#: actor's.
ALL, CRITIC, ACTOR = "all", "critic", "actor"
#: The terms that train the critic alone.
CRITIC_TERMS = ("v_loss", "kickstart_value")

#: The columns of the table of means, first: the order the update's reference was recorded
#: with (a column's place in the table changes its mean's last bits); other names follow.
_TABLE_ORDER = ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac", "kl_ref")


def loss_terms(pass_: MinibatchPass) -> dict[str, Tensor]:
    """Every registered term of one minibatch, by name (but those that are None: off in
    this minibatch), then the policy loss's metrics."""
    terms = {name: term.compute(pass_) for name, term in LOSS_TERM_REGISTRY.items()}
    return {**{k: v for k, v in terms.items() if v is not None}, **pass_.metrics}


def total_loss(terms: dict[str, Tensor], weights: TermWeights, phase: str = "all") -> Tensor:
    """The weighted sum of the loss terms, in registration order, leaving out a term whose
    weight is None for this update; in the ``critic`` phase (separate optimizers, the
    critic first) only :data:`CRITIC_TERMS`, in the ``actor`` phase only the others."""
    loss: Tensor | None = None
    for name, term in LOSS_TERM_REGISTRY.items():
        w = None if term.weight is None or name not in terms else term.weight(weights)
        if w is None or not _in_phase(name, phase):
            continue
        part = w * terms[name]
        loss = part if loss is None else loss + part
    if loss is None:
        raise ValueError(f"no loss term has a weight in this update's {phase} phase")
    return loss


def _in_phase(name: str, phase: str) -> bool:
    """Whether a term is trained in a phase (see :func:`total_loss`)."""
    return phase == ALL or (phase == CRITIC) == (name in CRITIC_TERMS)


def mean_terms(kept: list[dict[str, Tensor]]) -> dict[str, float]:
    """Averages each term over the minibatches and then over the data-parallel ranks.

    Args:
        kept: The detached terms of every minibatch of the update (:func:`loss_terms`).

    Returns:
        ``{name: mean}``; NaN for every registered term when ``kept`` is empty.
    """
    if not kept:
        return dict.fromkeys(LOSS_TERM_REGISTRY.names(), math.nan)
    first = [name for name in _TABLE_ORDER if name in kept[0]]
    names = first + [name for name in kept[0] if name not in first]
    # One [minibatches, terms] table, so one all-reduce carries every mean.
    rows = [torch.stack([terms[name] for name in names]) for terms in kept]
    return dict(zip(names, all_mean_(torch.stack(rows).mean(0)).tolist(), strict=True))


def logged(means: dict[str, float]) -> dict[str, Any]:
    """The means under their learn-info names: a registered term's ``log_as``, a policy
    loss's own metric ``losses/<name>``."""
    return {
        LOSS_TERM_REGISTRY.get(name).log_as if name in LOSS_TERM_REGISTRY else f"losses/{name}": v
        for name, v in means.items()
    }
