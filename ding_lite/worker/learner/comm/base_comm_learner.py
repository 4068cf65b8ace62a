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
from ding_lite.utils.errors import DingLiteError
from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.learner_hook import LearnerHook

TaskHandler = Callable[[dict[str, Any]], dict[str, Any]]

#: The coordinator's learner tasks, in the order a run sends them.
LEARNER_TASKS = (
    "learner_start_task",
    "learner_get_data_task",
    "learner_learn_task",
    "learner_close_task",
)


class BaseCommLearner(ABC):
    """The learner side of the parallel pipeline, independent of the transport.

    Subclasses implement DI-engine's three callables and ``hooks4call`` (DI-engine's abstract
    members, and all a subclass must implement). ``handlers`` maps each learner task name to
    the method named after it (``learner_learn_task`` -> ``learn_task``), taking and
    returning JSON dicts, which a transport serves; the methods here drive one learner
    iteration per learn task with those four members, and a subclass overrides any of them
    (or ``handlers``) to do more. The handlers are also reachable by DI-engine's callback
    names: ``deal_with_learner_start``, ``deal_with_get_data``, ``deal_with_learner_learn``
    and ``deal_with_learner_close``.

    Args:
        cfg: the comm learner's own settings (kept as ``self._cfg``; may be None).
    """

    def __init__(self, cfg: Any = None) -> None:
        self._cfg = cfg
        self._end_flag = True  # True while not serving (DI-engine's name)
        self._learner: BaseLearner | None = None
        self._batch_size = 0  # what the run's learn tasks ask get_data for

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
    def handlers(self) -> dict[str, TaskHandler]:
        """Task name -> handler: each of :data:`LEARNER_TASKS` to the method named after it
        without the ``learner_`` prefix (``start_task``, ``get_data_task``, ...)."""
        return {name: getattr(self, name.removeprefix("learner_")) for name in LEARNER_TASKS}

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

    # --- the tasks, with DI-engine's members only ----------------------------------------
    def start_task(self, task: dict[str, Any]) -> dict[str, Any]:
        """Builds the run's learner (``task`` as :meth:`_create_learner` takes it) and runs
        its ``before_run`` hooks (a checkpoint to resume from is loaded there)."""
        learner = self._create_learner(task)
        learner.call_hook("before_run")
        self._learner, self._batch_size = learner, int(task.get("batch_size", 0))
        return {"iteration": learner.train_iter, "policy_version": learner.train_iter}

    def get_data_task(self, task: dict[str, Any]) -> dict[str, Any]:
        """The learner's demand: samples per iteration and where it stands."""
        learner = self._require_learner()
        return {"batch_size": self._batch_size, "iteration": learner.train_iter}

    def learn_task(self, task: dict[str, Any]) -> dict[str, Any]:
        """Trains one iteration on the batch ``get_data`` returns (the ``hooks4call`` hooks
        publish the policy and the learn info); ``task["envstep"]`` is the env steps so far.

        Returns:
            ``{"iteration", "learn_info", "trained"}``; ``trained`` is false when
            ``get_data`` had no batch (None).
        """
        learner = self._require_learner()
        data = self.get_data(self._batch_size)
        if data is not None:
            learner.train(data, int(task.get("envstep", -1)))
        info = dict(learner.learn_info) if data is not None else {}
        return {"iteration": learner.train_iter, "learn_info": info, "trained": data is not None}

    def close_task(self, task: dict[str, Any]) -> dict[str, Any]:
        """Ends the run: the learner's ``after_run`` hooks (the final checkpoint), then
        ``close``."""
        learner = self._require_learner()
        learner.call_hook("after_run")
        learner.close()
        return {"iteration": learner.train_iter}

    def _require_learner(self) -> BaseLearner:
        if self._learner is None:
            raise DingLiteError("learner not started: send learner_start_task first")
        return self._learner

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
