"""BaseCommLearner: a learner as a worker that answers the coordinator's tasks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

TaskHandler = Callable[[dict[str, Any]], dict[str, Any]]


class BaseCommLearner(ABC):
    """The learner side of the parallel pipeline, independent of the transport.

    Subclasses map the learner task names (``learner_start_task``, ``learner_get_data_task``,
    ``learner_learn_task``, ``learner_close_task``) to handlers taking and returning JSON
    dicts, and serve them with a transport.
    """

    @property
    @abstractmethod
    def handlers(self) -> dict[str, TaskHandler]:
        """Task name -> handler."""

    @abstractmethod
    def start(self) -> None:
        """Starts serving tasks."""

    @abstractmethod
    def close(self) -> None:
        """Stops serving and releases everything (timed)."""
