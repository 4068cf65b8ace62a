"""The Policy interface: one model seen through three modes.

``learn_mode`` updates the model from a batch, ``collect_mode`` acts (sampling) and values
observations for rollouts, ``eval_mode`` acts deterministically. Each mode is a small object
with ``forward``; a learner, a collector and an evaluator each hold only the mode they need.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from ding_lite.utils.registry import Registry

POLICY_REGISTRY: Registry[type[Policy]] = Registry("policy")


class LearnMode:
    """The learner's view of a policy."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    @property
    def policy(self) -> Policy:
        """The policy this mode belongs to."""
        return self._policy

    def prepare(self, data: Any) -> Any:
        """The advantage step: turns collected rollouts (one, or a list) into the batch
        :meth:`forward` trains on. A learner times it apart from the update
        (``perf/advantage_s``); :meth:`forward` also takes unprepared rollouts."""
        prepare = getattr(self._policy, "_prepare_learn", None)  # a policy may have none
        return data if prepare is None else prepare(data)

    def forward(self, data: Any) -> dict[str, float]:
        """Runs one iteration's update on ``data``; returns scalars to log."""
        return self._policy._forward_learn(data)

    def state_dict(self) -> dict[str, Any]:
        return self._policy.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._policy.load_state_dict(state)


class _MemoryView:
    """What the collect and eval views share: the policy, and its memory (if any)."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    @property
    def recurrent(self) -> bool:
        """Whether the policy carries a state between steps (then use :meth:`step`)."""
        return bool(getattr(self._policy, "recurrent", False))

    def initial_state(self, batch: int, device: Any = None) -> torch.Tensor:
        """The state every episode starts from, ``[batch, state_size]``."""
        return self._policy.initial_state(batch, device)


class CollectMode(_MemoryView):
    """The collector's view: sampled actions with their log-probs and values."""

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns ``(action, log_prob, value)`` for a batch of observations (a
        feed-forward policy; a recurrent one steps with :meth:`step`)."""
        return self._policy._forward_collect(obs)

    def step(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of a recurrent policy: ``(action, log_prob, value, state after)``.

        ``episode_start`` (bool [B]) marks rows whose episode starts with ``obs``: their
        state is zeroed first."""
        return self._policy._step_collect(obs, state, episode_start)

    def get_value(
        self,
        obs: torch.Tensor,
        state: torch.Tensor | None = None,
        episode_start: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Returns V(obs), shape [B] (a recurrent policy: from ``state``, one row per
        observation, as one step)."""
        if state is None:
            return self._policy._get_value(obs)
        return self._policy._get_value(obs, state, episode_start)

    @property
    def obs_rms(self) -> Any:
        """The running observation statistics (a ``RunningNorm``), or None.

        With them, ``forward`` and ``get_value`` take normalized observations: the collector
        normalizes (and stores) them, and summarizes the raw ones for the learner.
        """
        return getattr(self._policy, "obs_rms", None)

    @property
    def ret_rms(self) -> Any:
        """The running statistics of the discounted return by which rewards are scaled, or
        None (no reward scaling)."""
        return getattr(self._policy, "ret_rms", None)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._policy.load_state_dict(state, model_only=True)


class EvalMode(_MemoryView):
    """The evaluator's view: actions without exploration noise (configurable)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Returns the actions for a batch of raw observations (normalized inside, with the
        statistics as they are: evaluation never updates them). A feed-forward policy; a
        recurrent one steps with :meth:`step`."""
        return self._policy._forward_eval(obs)

    def step(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(actions, state after)`` of a recurrent policy for raw observations;
        ``episode_start`` (bool [B]) zeroes the state of rows whose episode starts."""
        return self._policy._step_eval(obs, state, episode_start)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._policy.load_state_dict(state, model_only=True)


class Policy(ABC):
    """Base class of policies; subclasses implement the ``_forward_*`` methods."""

    def __init__(self) -> None:
        #: Figures of the run that trained this policy (set by the pipelines).
        self.result: dict[str, Any] | None = None
        self.learn_mode = LearnMode(self)
        self.collect_mode = CollectMode(self)
        self.eval_mode = EvalMode(self)

    @abstractmethod
    def _forward_learn(self, data: dict[str, torch.Tensor]) -> dict[str, float]: ...

    def _prepare_learn(self, data: Any) -> Any:
        """What :meth:`LearnMode.prepare` returns; this default: ``data`` as it is."""
        return data

    @abstractmethod
    def _forward_collect(
        self, obs: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

    @abstractmethod
    def _get_value(self, obs: torch.Tensor) -> torch.Tensor: ...

    @abstractmethod
    def _forward_eval(self, obs: torch.Tensor) -> torch.Tensor: ...

    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any], model_only: bool = False) -> None: ...
