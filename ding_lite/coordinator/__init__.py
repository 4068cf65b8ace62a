"""The coordinator of the parallel pipeline: task protocol, rollout ledger, watchdog."""

from ding_lite.coordinator.coordinator import Coordinator, Supervisor, Transport
from ding_lite.coordinator.status import RunStatus

__all__ = ["Coordinator", "RunStatus", "Supervisor", "Transport"]
