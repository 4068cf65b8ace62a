"""The slaves of the two worker roles, under DI-engine's names.

A :class:`LearnerSlave` is the comm learner's end of its link with the coordinator: it
registers as a learner, heartbeats, and runs each task the coordinator sends with the comm
learner's handler for it (``FlaskFileSystemLearner.handlers``: ``learner_start_task``,
``learner_learn_task``, ...), as DI-engine's ``LearnerSlave`` calls back into its
``FlaskFileSystemLearner``. A :class:`CollectorSlave` does the same for a comm collector.
Both are a :class:`~ding_lite.interaction.slave.Slave` with the role fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ding_lite.interaction.slave import Slave


class _RoleSlave(Slave):
    """A :class:`Slave` whose role its class names."""

    ROLE = ""

    def __init__(self, worker_id: str, master_address: str, **kwargs: Any) -> None:
        super().__init__(self.ROLE, worker_id, master_address, **kwargs)


class LearnerSlave(_RoleSlave):
    """A :class:`Slave` of role ``"learner"``; arguments as :class:`Slave`'s, less the role."""

    ROLE = "learner"


class CollectorSlave(_RoleSlave):
    """A :class:`Slave` of role ``"collector"``; arguments as :class:`Slave`'s, less the
    role."""

    ROLE = "collector"


# The roles' constructors differ from Slave's (each builds its own handlers).
SLAVES: dict[str, Callable[..., Slave]] = {"learner": LearnerSlave, "collector": CollectorSlave}
