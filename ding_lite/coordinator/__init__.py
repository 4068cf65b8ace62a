"""The coordinator of the parallel pipeline: task protocol, rollout ledger, watchdog.

:class:`Coordinator` owns the run's :class:`CoordinatorState` (what a restarted coordinator
takes back, :mod:`.recovery`) and hands it, with the transport, the ledger and the
:class:`Restarter`, to the collector pool (:mod:`.collectors`) and the learner link
(:mod:`.learner_side`).
"""

from ding_lite.coordinator.coordinator import Coordinator
from ding_lite.coordinator.state import CoordinatorState
from ding_lite.coordinator.status import RunStatus
from ding_lite.coordinator.workers import Restarter, Transport

__all__ = ["Coordinator", "CoordinatorState", "Restarter", "RunStatus", "Transport"]
