"""The coordinator of the parallel pipeline: task protocol, rollout ledger, watchdog."""

from ding_lite.coordinator.coordinator import Coordinator
from ding_lite.coordinator.status import RunStatus
from ding_lite.coordinator.workers import Supervisor, Transport

__all__ = ["Coordinator", "RunStatus", "Supervisor", "Transport"]
