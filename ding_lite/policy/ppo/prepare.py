"""The learner's side of a rollout before the update: what it recomputes with its own policy,
then the advantage step.

A rollout carries what the behaviour policy (the collector's version) saw: its log-probs
and its critic's values. In a parallel run that version may be one or more updates older
than the learner's. Before the advantages, the learner may refresh, with the policy it holds
as the update starts (the *proximal* policy):

- ``policy.learn.recompute_values``: ``value`` and ``next_value`` from its own critic (the
  rollout then carries ``next_obs``), so advantages and value targets are not built on an
  older critic's guesses;
- an off-policy estimator (``vtrace``) or a proximal policy loss (``decoupled``): the
  log-probs of the rollout's actions under the proximal policy, ``logp_prox``. The
  estimator weighs each step by ``exp(logp_prox - logp)``, the loss clips around
  ``logp_prox`` instead of the behaviour's ``logp``.

Nothing is recomputed when none of these is asked for, so a run that asks for none trains
on exactly what the collector shipped.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ding_lite.model import ActorCritic
from ding_lite.policy.ppo.advantages import AdvantageStep

Rollout = dict[str, Tensor]

#: Infos of the advantage step that are a state (the last one counts), not a per-rollout mean.
_LATEST = ("charts/kl_reward_coef", "data/pending_steps")


def memory_of(data: Rollout) -> tuple[Tensor, ...]:
    """A recurrent rollout's ``(core_state, episode_start)``; ``()`` for a feed-forward one."""
    return (data["core_state"], data["episode_start"]) if "core_state" in data else ()


class RolloutPrep:
    """Turns rollouts into one batch: refresh with the learner's policy, then advantages.

    Args:
        model: The learner's actor-critic (``model(obs, *memory) -> (dist, value)``,
            ``get_value(obs)``).
        advantages: The advantage step.
        recompute_values: Recompute ``value`` and ``next_value`` with ``model``.
        proximal: Keep ``logp_prox`` in the batch (a proximal policy loss needs it).
        ref_logp: Log-probs of a rollout's actions under the reference policy (for the KL
            in the reward), or None.
    """

    def __init__(
        self,
        model: ActorCritic,
        advantages: AdvantageStep,
        *,
        recompute_values: bool,
        proximal: bool,
        ref_logp: Callable[[Rollout], Tensor] | None,
    ) -> None:
        self.model = model
        self.advantages = advantages
        self.recompute_values = recompute_values
        self.proximal = proximal
        self.off_policy = bool(getattr(advantages.estimator, "off_policy", False))
        self.ref_logp = ref_logp

    def __call__(self, data: Rollout | list[Rollout]) -> tuple[Rollout, dict[str, float]]:
        """The batch of one rollout or a list of them (a parallel learn task's files),
        concatenated, and the advantage step's info (means over the rollouts); a batch
        that already has ``adv`` passes as it is."""
        rollouts = data if isinstance(data, list) else [data]
        batches, infos = [], []
        for rollout in rollouts:
            if "adv" in rollout:
                batches.append(rollout)
                continue
            batch, info = self.advantages(self.refresh(rollout), self.ref_logp)
            if not self.proximal:
                batch.pop("logp_prox", None)
            batches.append(batch)
            infos.append(info)
        merged: dict[str, float] = {}
        if infos:
            merged = {k: sum(i[k] for i in infos) / len(infos) for k in infos[0]}
            merged.update({k: infos[-1][k] for k in _LATEST if k in infos[-1]})
        if len(batches) == 1:
            return batches[0], merged
        return {k: torch.cat([b[k] for b in batches]) for k in batches[0]}, merged

    @torch.no_grad()
    def refresh(self, rollout: Rollout) -> Rollout:
        """The rollout with ``logp_prox`` (when an off-policy estimator or a proximal loss
        needs it) and the learner critic's ``value`` and ``next_value`` (with
        ``recompute_values``); ``next_obs`` is used up here."""
        rollout = dict(rollout)
        next_obs = rollout.pop("next_obs", None)
        need_logp = self.off_policy or self.proximal
        if not (need_logp or self.recompute_values):
            return rollout
        dist, value = self.model(rollout["obs"], *memory_of(rollout))
        if need_logp:
            rollout["logp_prox"] = dist.log_prob(rollout["action"])
        if self.recompute_values:
            if next_obs is None:
                raise ValueError("recompute_values needs rollouts with next_obs")
            rollout["value"] = value
            rollout["next_value"] = self.model.get_value(next_obs)
        return rollout
