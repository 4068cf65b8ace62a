"""BaseCommLearner: a learner as a worker that answers the coordinator's tasks.

The contract is DI-engine's (see docs/migrating.rst): a comm learner does not train itself.
It builds a :class:`BaseLearner` per run (``_create_learner``) and hands it what the parallel
setting needs: ``get_data`` through the learner's constructor, and the hooks of
``hooks4call`` (which publish the policy with ``send_policy`` and report the iteration with
``send_learn_info``) through ``register_hook``; nothing is patched onto the learner.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from ding_lite.utils import distributed
from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.learner_hook import LearnerHook

TaskHandler = Callable[[dict[str, Any]], dict[str, Any]]


class BaseCommLearner(ABC):
    """The learner side of the parallel pipeline, independent of the transport.

    Subclasses implement DI-engine's three callables and ``hooks4call``, and map the learner
    task names (``learner_start_task``, ``learner_get_data_task``, ``learner_learn_task``,
    ``learner_close_task``) to handlers taking and returning JSON dicts (``handlers``), which
    a transport serves. The handlers are also reachable by DI-engine's callback names:
    ``deal_with_learner_start``, ``deal_with_get_data``, ``deal_with_learner_learn`` and
    ``deal_with_learner_close``.

    Args:
        cfg: the comm learner's own settings (kept as ``self._cfg``; may be None).
    """

    def __init__(self, cfg: Any = None) -> None:
        self._cfg = cfg
        self._end_flag = True  # True while not serving (DI-engine's name)

    # --- DI-engine's abstract interface ---------------------------------------------------
    @abstractmethod
    def send_policy(self, state_dict: dict[str, Any]) -> None:
        """Publishes the policy's weights after an iteration (called by a hook)."""

    @abstractmethod
    def get_data(self, batch_size: int) -> Any:
        """Blocks until the next batch arrives; returns it (None: no more data)."""

    @abstractmethod
    def send_learn_info(self, learn_info: dict[str, Any]) -> None:
        """Reports an iteration's learn info (called by a hook)."""

    @property
    @abstractmethod
    def hooks4call(self) -> list[LearnerHook]:
        """The hooks ``_create_learner`` registers on every learner it builds."""

    @property
    @abstractmethod
    def handlers(self) -> dict[str, TaskHandler]:
        """Task name -> handler."""

    @property
    def rank(self) -> int:
        """This process's rank in the learner group (0: the one the coordinator talks to)."""
        return distributed.world()[0]

    @property
    def world_size(self) -> int:
        """Ranks of this data-parallel learner (1: not distributed)."""
        return distributed.world()[1]

    def start(self) -> None:
        """Starts serving tasks."""
        self._end_flag = False

    def close(self) -> None:
        """Stops serving and releases everything (timed)."""
        self._end_flag = True

    # --- DI-engine's callback names ------------------------------------------------------
    def deal_with_learner_start(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.handlers["learner_start_task"](task)

    def deal_with_get_data(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.handlers["learner_get_data_task"](task)

    def deal_with_learner_learn(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.handlers["learner_learn_task"](task)

    def deal_with_learner_close(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.handlers["learner_close_task"](task)

    # --- building the learner ------------------------------------------------------------
    def _create_learner(self, task_info: dict[str, Any]) -> BaseLearner:
        """Builds a run's :class:`BaseLearner`.

        Args:
            task_info: ``learner_cfg`` (the ``learner`` config section), ``policy`` (a policy
                or its ``learn_mode``), ``batch_size`` (passed to ``get_data``), and
                optionally ``exp_name``, ``exp_dir``, ``instance_name`` and ``tb_logger``.

        Returns:
            The learner, with ``get_data`` as its data source and ``hooks4call`` registered.
        """
        # DI-engine's step: the learner is distributed when this comm learner is.
        learner_cfg = dict(task_info.get("learner_cfg") or {})
        learner_cfg["use_distributed"] = self.world_size > 1
        learner = BaseLearner(
            learner_cfg,
            None,
            task_info.get("tb_logger"),
            task_info.get("exp_name", "default_experiment"),
            task_info.get("instance_name", "learner"),
            exp_dir=task_info.get("exp_dir"),
            get_data=functools.partial(self.get_data, int(task_info.get("batch_size", 0))),
        )
        for hook in self.hooks4call:
            learner.register_hook(hook)
        learner.policy = task_info["policy"]
        return learner
