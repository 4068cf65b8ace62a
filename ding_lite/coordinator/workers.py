"""What the coordinator needs from the parts around it: the task transport and the
restarter that restarts workers (the launcher; not to be confused with
:class:`~ding_lite.entry.launch.supervisor.RunSupervisor`, which restarts the coordinator)."""

from __future__ import annotations

from typing import Any, Protocol


class Transport(Protocol):
    """What the coordinator needs from the transport (``interaction.Master`` provides it)."""

    def worker_ids(self, role: str) -> list[str]: ...

    def send_task(self, worker_id: str, name: str, data: dict, timeout: float) -> Any: ...

    def send_task_async(self, worker_id: str, name: str, data: dict, timeout: float) -> Any: ...

    def workers(self, role: str | None = None) -> list[Any]:
        """The registered workers (``worker_id``, ``role``, ``address``), for the state a
        restarted coordinator takes back."""

    def restore_workers(self, workers: list[tuple[str, str, str]]) -> None:
        """Knows again the ``(worker_id, role, address)`` of a previous coordinator."""

    @property
    def cut_off_s(self) -> float:
        """Seconds nobody has been heard from while this host may be cut off (else 0.0):
        no task goes out meanwhile (optional; a transport without it is never cut off)."""


class Restarter(Protocol):
    """Restarts workers (the launcher); the per-role coordinator runs without one."""

    restarts: int

    def worker_failed(self, worker_id: str, role: str, reason: str) -> bool:
        """Stops what is left of the worker; returns whether a replacement will register."""

    def pending(self, role: str) -> int:
        """Replacements started or due that have not registered yet."""

    def poll(self) -> None:
        """Starts the replacements whose backoff has passed."""

    def closing(self) -> None:
        """The run is closing: a worker that exits now is done, not failed (optional)."""

    def retire(self, worker_id: str) -> None:
        """The worker was dropped for good (a restart would fail the same way): its exit is
        no failure to replace."""


def where_registered(transport: Transport, role: str) -> dict[str, str]:
    """Worker id -> address of the registered workers of ``role``."""
    return {w.worker_id: w.address for w in transport.workers(role)}
