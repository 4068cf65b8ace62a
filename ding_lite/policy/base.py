"""The Policy interface: one model seen through three modes.

``learn_mode`` updates the model from a batch, ``collect_mode`` acts (sampling) and values
observations for rollouts, ``eval_mode`` acts deterministically. Each mode is a small object
with ``forward``; a learner, a collector and an evaluator each hold only the mode they need.
A mode is handed the callables it runs (the policy's methods), never the policy itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import torch

from ding_lite.utils.registry import Registry

if TYPE_CHECKING:
    from ding_lite.model import ActorCritic

POLICY_REGISTRY: Registry[Callable[..., Policy]] = Registry("policy")


class LearnMode:
    """The learner's view of a policy: its update, its advantage step and its state.

    Args:
        forward: Runs one iteration's update on a batch; returns scalars to log.
        prepare: Turns collected rollouts into the batch ``forward`` trains on.
        state_dict: The policy's whole state.
        load_state_dict: Restores it.
        device: Where the policy's model lives (None: not said).
    """

    def __init__(
        self,
        *,
        forward: Callable[[Any], dict[str, float]],
        prepare: Callable[[Any], Any],
        state_dict: Callable[[], dict[str, Any]],
        load_state_dict: Callable[[dict[str, Any]], None],
        device: Any = None,
    ) -> None:
        self._forward, self._prepare = forward, prepare
        self._state_dict, self._load_state_dict = state_dict, load_state_dict
        self.device = device

    def prepare(self, data: Any) -> Any:
        """The advantage step: turns collected rollouts (one, or a list) into the batch
        :meth:`forward` trains on. A learner times it apart from the update
        (``perf/advantage_s``); :meth:`forward` also takes unprepared rollouts."""
        return self._prepare(data)

    def forward(self, data: Any) -> dict[str, float]:
        """Runs one iteration's update on ``data``; returns scalars to log."""
        return self._forward(data)

    def state_dict(self) -> dict[str, Any]:
        return self._state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_state_dict(state)


@dataclass(frozen=True)
class Acting:
    """What the collect and eval views are handed: how the policy acts, and its memory.

    Attributes:
        act: ``obs -> (action, log_prob, value)`` (collect) or ``obs -> action`` (eval).
        step: A recurrent policy's step (see :meth:`CollectMode.step`, :meth:`EvalMode.step`).
        initial_state: ``(batch, device) -> state`` of a recurrent policy.
        load_model: Loads a policy state's model (``model_only``).
        recurrent: Whether the policy carries a state between steps.
        get_value: ``(obs, state=None, episode_start=None) -> values``.
        obs_rms: The running observation statistics, or None.
        ret_rms: The running discounted-return statistics, or None.
    """

    act: Callable[..., Any]
    step: Callable[..., Any]
    initial_state: Callable[[int, Any], torch.Tensor]
    load_model: Callable[[dict[str, Any]], None]
    recurrent: bool
    get_value: Callable[..., torch.Tensor]
    obs_rms: Any
    ret_rms: Any


class _MemoryView:
    """What the collect and eval views share: the acting callables, and the memory."""

    def __init__(self, acting: Acting) -> None:
        self._acting = acting

    @property
    def recurrent(self) -> bool:
        """Whether the policy carries a state between steps (then use :meth:`step`)."""
        return self._acting.recurrent

    def initial_state(self, batch: int, device: Any = None) -> torch.Tensor:
        """The state every episode starts from, ``[batch, state_size]``."""
        return self._acting.initial_state(batch, device)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Loads a policy state's model (the rest of it is the learner's)."""
        self._acting.load_model(state)


class CollectMode(_MemoryView):
    """The collector's view: sampled actions with their log-probs and values."""

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns ``(action, log_prob, value)`` for a batch of observations (a
        feed-forward policy; a recurrent one steps with :meth:`step`); ``deterministic``:
        the most likely actions (a greedy baseline's, ``remax``) instead of samples."""
        if deterministic:
            return self._acting.act(obs, deterministic=True)
        return self._acting.act(obs)

    def step(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of a recurrent policy: ``(action, log_prob, value, state after)``.

        ``episode_start`` (bool [B]) marks rows whose episode starts with ``obs``: their
        state is zeroed first."""
        return self._acting.step(obs, state, episode_start)

    def get_value(
        self,
        obs: torch.Tensor,
        state: torch.Tensor | None = None,
        episode_start: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Returns V(obs), shape [B] (a recurrent policy: from ``state``, one row per
        observation, as one step)."""
        if state is None:
            return self._acting.get_value(obs)
        return self._acting.get_value(obs, state, episode_start)

    @property
    def obs_rms(self) -> Any:
        """The running observation statistics (a ``RunningNorm``), or None.

        With them, ``forward`` and ``get_value`` take normalized observations: the collector
        normalizes (and stores) them, and summarizes the raw ones for the learner.
        """
        return self._acting.obs_rms

    @property
    def ret_rms(self) -> Any:
        """The running statistics of the discounted return by which rewards are scaled, or
        None (no reward scaling)."""
        return self._acting.ret_rms


class EvalMode(_MemoryView):
    """The evaluator's view: actions without exploration noise (configurable)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Returns the actions for a batch of raw observations (normalized inside, with the
        statistics as they are: evaluation never updates them). A feed-forward policy; a
        recurrent one steps with :meth:`step`."""
        return self._acting.act(obs)

    def step(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(actions, state after)`` of a recurrent policy for raw observations;
        ``episode_start`` (bool [B]) zeroes the state of rows whose episode starts."""
        return self._acting.step(obs, state, episode_start)


class Policy(ABC):
    """Base class of policies; subclasses implement the ``_forward_*`` methods.

    The three modes are built on first use, each handed the policy's methods it calls (a
    recurrent policy also implements ``_step_collect``, ``_step_eval`` and
    ``initial_state``; ``recurrent``, ``obs_rms``, ``ret_rms`` and ``device`` are read as
    the policy has them then).
    """

    # What subclasses set: the network the modes act with, and the device it lives on.
    model: ActorCritic
    device: torch.device

    def __init__(self) -> None:
        #: Figures of the run that trained this policy (set by the pipelines).
        self.result: dict[str, Any] | None = None

    @cached_property
    def learn_mode(self) -> LearnMode:
        """The learner's view."""
        return LearnMode(
            forward=self._forward_learn,
            prepare=self._prepare_learn,
            state_dict=self.state_dict,
            load_state_dict=self.load_state_dict,
            device=getattr(self, "device", None),
        )

    @cached_property
    def collect_mode(self) -> CollectMode:
        """The collector's view."""
        return CollectMode(self._acting(self._forward_collect, self._step_collect))

    @cached_property
    def eval_mode(self) -> EvalMode:
        """The evaluator's view."""
        return EvalMode(self._acting(self._forward_eval, self._step_eval))

    def _acting(self, act: Callable[..., Any], step: Callable[..., Any]) -> Acting:
        return Acting(
            act=act,
            step=step,
            initial_state=self.initial_state,
            load_model=partial(self.load_state_dict, model_only=True),
            recurrent=bool(getattr(self, "recurrent", False)),
            get_value=self._get_value,
            obs_rms=getattr(self, "obs_rms", None),
            ret_rms=getattr(self, "ret_rms", None),
        )

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

    def _step_collect(self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor):
        raise NotImplementedError(f"{type(self).__name__} is not recurrent")

    def _step_eval(self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor):
        raise NotImplementedError(f"{type(self).__name__} is not recurrent")

    def initial_state(self, batch: int, device: Any = None) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} is not recurrent")

    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any], model_only: bool = False) -> None: ...
