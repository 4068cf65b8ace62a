"""The advantage step: from a collector's rollout to a batch the PPO update trains on.

It runs where the update runs, on the learner, in both pipelines: collectors ship each step's
``reward``, ``value``, ``next_value`` (the value of the observation after the step, before
any reset), ``terminated`` and ``done`` with the observations, actions and log-probs, and
the learner, which holds the reference policy and the freshest critic, turns them into
``adv`` and ``ret``. On the way it may fold a KL penalty into the reward
(``policy.learn.kl_in_reward``).

A step-level estimator (GAE) sees each rollout as its [T, B] tensors. An episode-level one
(REINFORCE++, GRPO, RLOO) needs whole episodes, and a grouped one whole groups (the k-th
episode of every copy of a group, ``env.reset_group_size``): the steps of an episode that
has not ended, or whose group still waits for a member, are held back and join a later
batch, so a batch holds only complete groups and its size varies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ding_lite.rl_utils.adv_estimator import AdvEstimator
from ding_lite.rl_utils.kl_control import KLController
from ding_lite.rl_utils.loss_agg import lengths_by_key, sequence_lengths

STEP_KEYS = ("reward", "next_value", "terminated", "done")
"""What a rollout carries for the advantage step only (not trained on)."""

TEACHER = ("teacher_action",)  # a scripted kickstarting teacher's actions, where shipped


STALE_CALLS = 64
"""A stream silent for this many rollouts (its collector is gone) has its held-back
steps dropped."""

_KEY_SHIFT = 32
"""Episode numbers fill the low 32 bits of an (episode or group) key."""


def time_major(rows: Tensor, n_steps: int, horizon: int) -> Tensor:
    """Rollout rows back to the [T, B, ...] layout they were stepped in (the inverse of
    :func:`as_rows`)."""
    if horizon == 1:
        return rows.unflatten(0, (n_steps, -1))
    segments = rows.unflatten(0, (-1, n_steps // horizon, horizon))  # [B, T / h, h, ...]
    return segments.movedim(0, 2).flatten(0, 1)


def as_rows(x: Tensor, horizon: int, copy: bool = True) -> Tensor:
    """``x`` [T, B, ...] as rollout rows: time-major with one-step segments, else segment by
    segment (copy b's k-th segment is rows ``(b * T / h + k) * h`` onward)."""
    if horizon == 1:
        flat = x.flatten(0, 1)
        return flat.clone() if copy else flat
    return x.unflatten(0, (x.shape[0] // horizon, horizon)).movedim(2, 0).flatten(0, 2)


class AdvantageStep:
    """Computes advantages and returns of rollouts, holding back unfinished episodes.

    Args:
        estimator: The registered advantage estimator.
        gamma: Discount factor.
        lam: GAE lambda (step-level estimators).
        n_steps: Env steps per copy in one rollout (``policy.collect.n_steps``).
        horizon: Steps per segment (``policy.learn.bptt_horizon``).
        norm_by_std: Passed to an episode-level estimator (GRPO divides by the group's
            standard deviation unless False).
        kl: The KL-in-reward controller, or None for none.
        rho_max: An off-policy estimator's truncation of each step's importance weight.
        c_max: An off-policy estimator's truncation of its traces.
        sequences: Add ``seq_len`` to each batch: every step's sequence length (a segment
            cut at episode starts, or an episode), for a per-sequence ``loss_agg_mode``.
    """

    def __init__(
        self,
        estimator: AdvEstimator,
        *,
        gamma: float,
        lam: float,
        n_steps: int,
        horizon: int,
        norm_by_std: bool = True,
        kl: KLController | None = None,
        rho_max: float = 1.0,
        c_max: float = 1.0,
        sequences: bool = False,
    ) -> None:
        self.estimator = estimator
        self.sequences = sequences
        self.rho_max, self.c_max = rho_max, c_max
        self.gamma, self.lam = gamma, lam
        self.n_steps, self.horizon = n_steps, horizon
        self.norm_by_std = norm_by_std
        self.kl = kl
        self._pending: dict[str, Tensor] = {}  # held-back steps, with their env copy "col"
        # Per stream: its first global column, each copy's next step number, the last call
        # it came in; and the group keys of episodes cut by a missing rollout.
        self._streams: dict[int, dict[str, Any]] = {}
        self._members = torch.zeros(0, dtype=torch.long)  # copies per global group
        self._broken = torch.zeros(0, dtype=torch.long)
        self._calls = 0
        self.dropped_steps = 0  #: steps dropped because their episode lost a part

    def __call__(
        self, rollout: dict[str, Tensor], ref_logp: Callable[[dict[str, Tensor]], Tensor] | None
    ) -> tuple[dict[str, Tensor], dict[str, float]]:
        """Turns one rollout into a batch.

        Args:
            rollout: One collector rollout (``STEP_KEYS`` beside the trained fields; with an
                episode-level estimator also the
                :data:`~ding_lite.utils.rollout_fields.EPISODE_INDEX_KEYS`; with an off-policy
                one ``logp_prox``, the learner's log-probs, see
                :mod:`~ding_lite.policy.ppo.prepare`).
            ref_logp: Log-probs of the rollout's actions under the reference policy, needed
                with a KL controller.

        Returns:
            ``(batch, info)``: the trained fields with ``adv`` and ``ret`` (for an
            episode-level estimator, the steps of the groups completed so far, possibly
            none), and ``data/reward_mean`` and ``data/reward_std`` (the mean and standard
            deviation of the rollout's rewards per step, before
            any KL penalty), with a KL controller also ``charts/kl_reward_coef`` and
            ``data/kl_in_reward`` (the mean per-step KL estimate), with an episode-level
            estimator ``data/pending_steps`` and ``data/dropped_steps`` (so far: steps of
            episodes a missing rollout or a lost collector cut).
        """
        reward = rollout["reward"]
        info = {
            "data/reward_mean": float(reward.mean()) if reward.numel() else 0.0,
            "data/reward_std": float(reward.std()) if reward.numel() > 1 else 0.0,
        }
        if self.kl is not None:
            if ref_logp is None:
                raise ValueError("kl_in_reward needs the reference policy's log-probs")
            kl_step = self.kl.estimate(rollout["logp"], ref_logp(rollout))
            info["charts/kl_reward_coef"] = self.kl.coef
            reward = reward - self.kl.coef * kl_step
            mean_kl = float(kl_step.mean()) if kl_step.numel() else 0.0
            info["data/kl_in_reward"] = mean_kl
            self.kl.update(mean_kl, int(kl_step.numel()))
        if self.estimator.episodic:
            batch = self._episodes(rollout, reward)
            info["data/pending_steps"] = float(self.pending_steps)
            info["data/dropped_steps"] = float(self.dropped_steps)
            return batch, info
        T, h = self.n_steps, self.horizon
        extra = {}
        if getattr(self.estimator, "off_policy", False):  # vtrace: learner over behaviour
            log_rho = time_major(rollout["logp_prox"] - rollout["logp"], T, h)
            extra = {"log_rho": log_rho, "rho_max": self.rho_max, "c_max": self.c_max}
        adv, ret = self.estimator.fn(
            time_major(reward, T, h),
            time_major(rollout["value"], T, h),
            time_major(rollout["next_value"], T, h),
            time_major(rollout["terminated"], T, h),
            time_major(rollout["done"], T, h),
            self.gamma,
            self.lam,
            **extra,
        )
        batch = {k: v for k, v in rollout.items() if k not in STEP_KEYS}
        batch["adv"] = as_rows(adv, h, copy=False)
        batch["ret"] = as_rows(ret, h, copy=False)
        if self.sequences:
            done = time_major(rollout["done"], T, h)
            starts = torch.ones_like(done)  # a segment's first step, or an episode's
            starts[1:] = done[:-1]
            starts[::h] = True
            batch["seq_len"] = sequence_lengths(as_rows(starts, h))
        return batch, info

    @property
    def pending_steps(self) -> int:
        """Steps held back for an episode or group that is not complete yet."""
        return int(self._pending["col"].shape[0]) if self._pending else 0

    def _episodes(self, rollout: dict[str, Tensor], reward: Tensor) -> dict[str, Tensor]:
        """Adds the rollout's steps to those held back; returns the steps of every group
        now complete, with their advantages, in env-copy then time order."""
        rows = reward.shape[0]
        copies = rows // self.n_steps
        fields = ("obs", "action", "logp", "value", "done", "episode", "logp_prox", *TEACHER)
        fresh = {k: rollout[k] for k in fields if k in rollout}
        fresh["reward"] = reward
        stream = self._stream(rollout, copies)
        local = torch.arange(rows, device=reward.device) % copies  # rows are time-major
        fresh["col"] = stream["base"] + local
        # Global groups: a copy of its own (estimators that compare nothing) or its group.
        group = rollout["group"] if self.estimator.grouped else local
        fresh["key"] = ((stream["base"] + group) << _KEY_SHIFT) | rollout["episode"]
        if self.estimator.greedy_baseline:  # the first row of each group acted greedily
            first = torch.ones(copies, dtype=torch.bool, device=reward.device)
            first[1:] = rollout["group"][1:copies] != rollout["group"][: copies - 1]
            fresh["greedy"] = first[local]
        fresh = self._drop_cut(fresh, stream, rollout["step"], copies)
        merged = fresh
        if self._pending:
            merged = {k: torch.cat((self._pending[k], v)) for k, v in fresh.items()}
        merged = self._drop_stale(merged)
        # A stable sort by env copy keeps each copy's steps in time order: held-back steps
        # came first, and a rollout's rows are time-major.
        order = torch.sort(merged["col"], stable=True).indices
        merged = {k: v[order] for k, v in merged.items()}
        # A group's k-th episodes are complete when every copy of the group has ended one.
        group_key, done = merged["key"], merged["done"]
        ended_groups, ended_count = torch.unique(group_key[done], return_counts=True)
        members = self._members.to(group_key.device)
        complete = ended_groups[ended_count == members[ended_groups >> _KEY_SHIFT]]
        # An unfinished episode's group is never complete; an ended episode whose group
        # still waits for a member waits with it.
        ready = torch.isin(group_key, complete)
        self._pending = {k: v[~ready] for k, v in merged.items()}
        if not bool(self._pending["col"].numel()):
            self._pending = {}
        taken = {k: v[ready] for k, v in merged.items()}
        greedy = {"greedy": taken["greedy"]} if "greedy" in taken else {}
        taken["adv"], taken["ret"] = self.estimator.fn(
            taken["reward"],
            taken["done"],
            group_key[ready],
            self.gamma,
            norm_by_std=self.norm_by_std,
            **greedy,
        )
        if greedy:  # the greedy episodes were a baseline, not samples of the policy
            taken = {k: v[~taken["greedy"]] for k, v in taken.items()}
        keep = ("obs", "action", "logp", "value", "logp_prox", "adv", "ret", *TEACHER)
        batch: dict[str, Tensor] = {k: taken[k] for k in keep if k in taken}
        if self.sequences:  # an episode of one env copy: its column and episode number
            batch["seq_len"] = lengths_by_key((taken["col"] << _KEY_SHIFT) | taken["episode"])
        for key in ("obs_norm_update", "ret_norm_update"):
            if key in rollout:
                batch[key] = rollout[key]
        return batch

    def _stream(self, rollout: dict[str, Tensor], copies: int) -> dict[str, Any]:
        """The state of the rollout's stream; a new stream gets the next global columns
        and groups."""
        self._calls += 1
        sid = int(rollout["stream"][0]) if rollout["stream"].numel() else 0
        stream = self._streams.get(sid)
        if stream is None:
            base = int(self._members.shape[0])
            if self.estimator.grouped:
                members = torch.bincount(rollout["group"][:copies].cpu(), minlength=copies)
            else:
                members = torch.ones(copies, dtype=torch.long)
            self._members = torch.cat((self._members, members[:copies]))
            stream = {"base": base, "next_step": None}
            self._streams[sid] = stream
        stream["last_call"] = self._calls
        return stream

    def _drop_cut(
        self, fresh: dict[str, Tensor], stream: dict[str, Any], step: Tensor, copies: int
    ) -> dict[str, Tensor]:
        """Drops what a missing rollout of this stream cut: the held-back steps of each copy
        whose steps do not follow on, the fresh steps of the episode it was in, and every
        step of the groups those episodes belonged to (now or later)."""
        expected, first = stream["next_step"], step[:copies].cpu()
        stream["next_step"] = step[-copies:].cpu() + 1
        if expected is not None and not torch.equal(expected, first):
            cut = torch.nonzero(expected != first).squeeze(1) + stream["base"]
            keys = [fresh["key"][:copies][cut - stream["base"]]]
            if self._pending:
                keys.append(self._pending["key"][torch.isin(self._pending["col"], cut)])
            self._broken = torch.unique(torch.cat((self._broken, *[k.cpu() for k in keys])))
        if not self._broken.numel():
            return fresh
        return self._keep(fresh, ~torch.isin(fresh["key"], self._broken.to(step.device)))

    def _drop_stale(self, merged: dict[str, Tensor]) -> dict[str, Tensor]:
        """Drops the held-back steps of streams silent for :data:`STALE_CALLS` rollouts,
        and of the groups a missing rollout cut."""
        keep = ~torch.isin(merged["key"], self._broken.to(merged["key"].device))
        for stream in self._streams.values():
            if self._calls - stream["last_call"] > STALE_CALLS:
                cols = merged["col"] - stream["base"]
                keep &= ~((cols >= 0) & (cols < stream["next_step"].shape[0]))
        return merged if bool(keep.all()) else self._keep(merged, keep)

    def _keep(self, steps: dict[str, Tensor], keep: Tensor) -> dict[str, Tensor]:
        self.dropped_steps += int((~keep).sum())
        return {k: v[keep] for k, v in steps.items()}

    def state_dict(self) -> dict[str, Any]:
        """The held-back steps, the streams and the KL coefficient (tensors and numbers)."""
        state: dict[str, Any] = {
            "pending": {k: v.clone() for k, v in self._pending.items()},
            "streams": {
                str(sid): {**st, "next_step": st["next_step"].clone()}
                for sid, st in self._streams.items()
            },
            "members": self._members.clone(),
            "broken": self._broken.clone(),
            "calls": self._calls,
            "dropped_steps": self.dropped_steps,
        }
        if self.kl is not None:
            state["kl"] = self.kl.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned."""
        self._pending = {k: v.clone() for k, v in state.get("pending", {}).items()}
        self._streams = {int(k): dict(v) for k, v in state.get("streams", {}).items()}
        self._members = state.get("members", torch.zeros(0, dtype=torch.long)).clone()
        self._broken = state.get("broken", torch.zeros(0, dtype=torch.long)).clone()
        self._calls = int(state.get("calls", 0))
        self.dropped_steps = int(state.get("dropped_steps", 0))
        if self.kl is not None and "kl" in state:
            self.kl.load_state_dict(state["kl"])
