"""The coordinator of the parallel pipeline: task protocol and metadata buffer."""

from ding_lite.coordinator.coordinator import Coordinator, RunStatus

__all__ = ["Coordinator", "RunStatus"]
