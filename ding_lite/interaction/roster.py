"""The master's roster: registered workers and the tasks waiting for a result, under one lock.

Every public method takes the lock for its whole check-and-change, so a request that fails a
check changes nothing, and a heartbeat cannot slip between "this worker is stale" and "drop
it". Events are set and clients closed outside the lock.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ding_lite.interaction.addresses import is_loopback
from ding_lite.interaction.client import HttpClient
from ding_lite.interaction.envelope import ApiError, Code
from ding_lite.interaction.protocol import WORKER_LOST, TaskResult, WorkerInfo
from ding_lite.utils.clock import PauseDetector


@dataclass
class _Worker:
    worker_id: str
    role: str
    address: str
    client: HttpClient
    last_seen: float
    restored: bool = False  # known from a restarted master's records, not heard from yet


@dataclass
class PendingTask:
    """A task sent and not yet resolved; ``done`` is set once ``result`` is final."""

    task_id: str
    worker_id: str
    name: str
    started: float
    done: threading.Event
    result: TaskResult | None = None


def _resolve(entry: PendingTask, success: bool, result: dict[str, Any], error: str) -> None:
    # Only the caller that removed ``entry`` from the pending map gets here, once.
    elapsed = time.monotonic() - entry.started
    entry.result = TaskResult(
        entry.task_id, entry.worker_id, entry.name, success, result, error, elapsed
    )
    entry.done.set()


class Roster:
    """Workers by id and pending tasks by id.

    Args:
        heartbeat_tolerance: seconds of silence after which a worker counts as lost.
        make_client: builds the client used to call a worker at an address.
        cut_off_tolerance: seconds nobody may be heard from before anyone is declared lost,
            when the silent include workers on other hosts (0: no such rule). When every
            worker falls silent at once, the likeliest cause is this host's own link, not
            all of them dying together; workers give up on an unreachable master after
            their ``master_timeout``, which is what this should be.
    """

    def __init__(
        self,
        heartbeat_tolerance: float,
        make_client: Callable[[str], HttpClient],
        cut_off_tolerance: float = 0.0,
    ) -> None:
        self.heartbeat_tolerance = heartbeat_tolerance
        self.cut_off_tolerance = cut_off_tolerance
        # The last heartbeat heard, while nobody has been heard since (see _cut_off_locked).
        self._cut_off_since: float | None = None
        self._make_client = make_client
        self._lock = threading.Lock()
        self._workers: dict[str, _Worker] = {}
        self._pending: dict[str, PendingTask] = {}
        self._closed = False
        # Liveness is judged at least every monitor tick; a longer gap between two
        # judgements means this process was not running (see _forgive_own_pause_locked).
        self._pause = PauseDetector(max(0.5, heartbeat_tolerance / 2))
        #: Called (outside the lock) with the seconds of each pause of this process noticed.
        self.on_pause: Callable[[float], None] | None = None
        #: Called (outside the lock) with ``(True, seconds)`` when nobody has been heard from
        #: for the heartbeat tolerance, and ``(False, seconds)`` when someone is heard again.
        self.on_cut_off: Callable[[bool, float], None] | None = None

    @property
    def cut_off_s(self) -> float:
        """Seconds since any worker was last heard from, while nobody is (else 0.0)."""
        since = self._cut_off_since
        return 0.0 if since is None else time.monotonic() - since

    @property
    def paused_s(self) -> float:
        """Seconds this process was noticed not running, in all (see :meth:`pop_lost`)."""
        return self._pause.paused_s

    def _forgive_own_pause_locked(self, now: float) -> float:
        """After a pause of this process, every worker gets a fresh tolerance.

        Their heartbeats could not be answered while this process was stopped; judging
        them by the gap would blame them for the master's own absence. Returns the pause.
        """
        paused = self._pause.tick()
        if paused:
            for worker in self._workers.values():
                worker.last_seen = max(worker.last_seen, now)
        return paused

    def _judge(self) -> tuple[float, float]:
        """Takes the lock's view of time: ``(now, pause that just ended)`` (lock held)."""
        now = time.monotonic()
        return now, self._forgive_own_pause_locked(now)

    def _info(self, worker: _Worker, now: float) -> WorkerInfo:
        alive = now - worker.last_seen <= self.heartbeat_tolerance
        return WorkerInfo(worker.worker_id, worker.role, worker.address, worker.last_seen, alive)

    # ------------------------------------------------------------------ workers
    def register(
        self, worker_id: str, role: str, address: str
    ) -> tuple[WorkerInfo, WorkerInfo | None]:
        """Adds a worker, refreshes it, or lets a new process take over a silent id.

        - an unknown id is added;
        - the same id, role and address is refreshed, live or not (the same worker again,
          e.g. one that was told 404 on a heartbeat); its pending tasks stand;
        - an id held by a live worker (within the tolerance) at another address or with
          another role gets 409, and nothing changes, not even the holder's ``last_seen``;
        - an id silent for longer than the tolerance is taken over: the old holder is
          dropped as if lost (its pending tasks fail with "worker lost") and returned;
          so is an id :meth:`restore` brought back and no heartbeat has confirmed yet
          (a new process took the place of one that did not outlive the old master).

        Returns:
            ``(info, replaced)``: the registered worker, and the silent worker it replaced
            (None when it was added or refreshed).

        Raises:
            ApiError: (409) the id is held by a live worker elsewhere or with another role.
        """
        now = time.monotonic()
        replaced: tuple[_Worker, list[PendingTask]] | None = None
        with self._lock:
            worker = self._workers.get(worker_id)
            if worker is not None and (worker.address, worker.role) != (address, role):
                if worker.restored or now - worker.last_seen > self.heartbeat_tolerance:
                    replaced = self._pop_worker_locked(worker_id)
                    worker = None
                elif worker.address != address:
                    raise ApiError(
                        Code.CONFLICT,
                        f"worker id '{worker_id}' is in use by a live {worker.role} at "
                        f"{worker.address}; pick another --worker-id",
                    )
                else:
                    raise ApiError(
                        Code.CONFLICT,
                        f"worker '{worker_id}' is already registered as a {worker.role}",
                    )
            if worker is None:
                worker = _Worker(worker_id, role, address, self._make_client(address), now)
                self._workers[worker_id] = worker
            worker.last_seen, worker.restored = now, False
            info = self._info(worker, now)
        if replaced is None:
            return info, None
        old, orphans = replaced
        self._fail(old, orphans, WORKER_LOST)
        return info, self._info(old, now)

    def heartbeat(self, worker_id: str) -> str:
        """Marks a worker as seen now.

        Returns:
            The address the id is registered at, so a worker can tell when another process
            has taken its id over.

        Raises:
            ApiError: (404) unknown worker: it must register (again).
        """
        with self._lock:
            worker = self._workers.get(worker_id)
            if worker is None:
                raise ApiError(
                    Code.NOT_FOUND, f"unknown worker '{worker_id}'; register before heartbeats"
                )
            worker.last_seen, worker.restored = time.monotonic(), False
            return worker.address

    def restore(self, workers: list[tuple[str, str, str]]) -> None:
        """Takes back ``(worker_id, role, address)`` of workers a previous master of this
        run had registered (a restarted coordinator): each counts as seen now, so it has
        the heartbeat tolerance to be heard from before it is declared lost, and its
        heartbeats are answered as before. Ids already registered are left as they are."""
        now = time.monotonic()
        with self._lock:
            for worker_id, role, address in workers:
                if worker_id not in self._workers:
                    client = self._make_client(address)
                    self._workers[worker_id] = _Worker(
                        worker_id, role, address, client, now, restored=True
                    )

    def deregister(self, worker_id: str, reason: str) -> None:
        """Removes a worker; its pending tasks fail with ``reason``.

        Raises:
            ApiError: (404) unknown worker.
        """
        with self._lock:
            if worker_id not in self._workers:
                raise ApiError(Code.NOT_FOUND, f"unknown worker '{worker_id}'")
            worker, orphans = self._pop_worker_locked(worker_id)
        self._fail(worker, orphans, reason)

    def pop_lost(self, reason: str) -> list[WorkerInfo]:
        """Removes every worker silent for longer than the tolerance; fails their tasks.

        Called regularly (the master's monitor). When this process itself was paused since
        the previous call, nobody is declared lost: every worker gets a fresh tolerance.
        """
        with self._lock:
            now, paused = self._judge()
            news = self._cut_off_locked(now)
            silent = [] if self._cut_off_since is not None else list(self._workers.values())
            lost = [
                self._pop_worker_locked(w.worker_id) for w in silent if self._is_lost_locked(w, now)
            ]
        self._paused(paused)
        if news is not None and self.on_cut_off is not None:
            self.on_cut_off(*news)
        infos = []
        for worker, orphans in lost:
            self._fail(worker, orphans, reason)
            infos.append(self._info(worker, now))
        return infos

    def _is_lost_locked(self, worker: _Worker, now: float) -> bool:
        """Silent past the tolerance, and, where a cut-off could explain the silence,
        someone else heard from after this worker's deadline (lock held).

        Heartbeats are not in step: when this host's link goes down, the worker heard
        last falls silent a moment after the first one, and judging the first alone would
        declare it lost just before the silence of all shows the cut-off. Until another
        worker gets through after its deadline, or the cut-off tolerance is spent, its
        silence proves nothing about it.
        """
        silent_s = now - worker.last_seen
        if silent_s <= self.heartbeat_tolerance:
            return False
        if not self._cut_off_applies() or silent_s > self.cut_off_tolerance:
            return True
        heard = max(w.last_seen for w in self._workers.values())
        return heard > worker.last_seen + self.heartbeat_tolerance

    def _cut_off_applies(self) -> bool:
        """The cut-off rule is on and some worker is on another host (lock held)."""
        return self.cut_off_tolerance > 0 and any(
            not is_loopback(w.address) for w in self._workers.values()
        )

    def _cut_off_locked(self, now: float) -> tuple[bool, float] | None:
        """Judges whether this master is cut off from its workers (lock held).

        Nobody heard for the heartbeat tolerance, with workers on other hosts among them:
        nobody is declared lost for up to ``cut_off_tolerance`` seconds of that silence.
        The first worker heard again ends it, and every worker gets a fresh tolerance (the
        others' heartbeats may still be on their way). Past ``cut_off_tolerance`` the
        silent are lost as usual. Returns the news to tell (see :attr:`on_cut_off`).
        """
        workers = list(self._workers.values())
        heard = max((w.last_seen for w in workers), default=now)
        since = self._cut_off_since
        if since is not None and now - heard <= self.heartbeat_tolerance:
            for worker in workers:
                worker.last_seen = now
            self._cut_off_since = None
            return False, now - since
        if not self._cut_off_applies():
            self._cut_off_since = None
            return None
        if now - heard <= self.heartbeat_tolerance or now - heard > self.cut_off_tolerance:
            self._cut_off_since = None
            return None
        if since is None:
            self._cut_off_since = heard
            return True, now - heard
        return None

    def _paused(self, seconds: float) -> None:
        if seconds and self.on_pause is not None:
            self.on_pause(seconds)

    def workers(self, role: str | None = None) -> list[WorkerInfo]:
        """Snapshots of the workers (of ``role`` if given), sorted by id."""
        with self._lock:
            now, paused = self._judge()
            found = [self._info(w, now) for w in self._workers.values() if role in (None, w.role)]
        self._paused(paused)
        return sorted(found, key=lambda info: info.worker_id)

    def _pop_worker_locked(self, worker_id: str) -> tuple[_Worker, list[PendingTask]]:
        worker = self._workers.pop(worker_id)
        orphans = [p for p in self._pending.values() if p.worker_id == worker_id]
        for entry in orphans:
            del self._pending[entry.task_id]
        return worker, orphans

    @staticmethod
    def _fail(worker: _Worker | None, orphans: list[PendingTask], reason: str) -> None:
        for entry in orphans:
            _resolve(entry, False, {}, reason)
        if worker is not None:
            worker.client.close()

    # -------------------------------------------------------------------- tasks
    def open_task(self, worker_id: str, name: str) -> tuple[PendingTask, HttpClient | None]:
        """Creates a pending task for a worker, returning it with the worker's client.

        When the task cannot be sent (registry closed, unknown worker) the task comes back
        already resolved as failed, with no client.
        """
        entry = PendingTask(uuid.uuid4().hex, worker_id, name, time.monotonic(), threading.Event())
        with self._lock:
            worker = self._workers.get(worker_id)
            if not self._closed and worker is not None:
                self._pending[entry.task_id] = entry
                return entry, worker.client
            closed = self._closed
        _resolve(entry, False, {}, "master stopped" if closed else f"unknown worker '{worker_id}'")
        return entry, None

    def complete(
        self, entry: PendingTask, success: bool, result: dict[str, Any], error: str
    ) -> None:
        """Resolves ``entry`` if it is still pending; a no-op when something resolved it first."""
        with self._lock:
            if self._pending.get(entry.task_id) is not entry:
                return
            del self._pending[entry.task_id]
        _resolve(entry, success, result, error)

    def forget(self, entry: PendingTask) -> None:
        """Drops ``entry`` without resolving it (it was never delivered)."""
        with self._lock:
            if self._pending.get(entry.task_id) is entry:
                del self._pending[entry.task_id]

    def submit_result(
        self, task_id: str, worker_id: str, success: bool, result: dict[str, Any], error: str
    ) -> None:
        """Resolves a pending task with the outcome its worker reported.

        Raises:
            ApiError: (404) no such pending task; (400) it was sent to another worker.
        """
        with self._lock:
            entry = self._pending.get(task_id)
            if entry is None:
                raise ApiError(
                    Code.NOT_FOUND, f"unknown task '{task_id}' (never sent, timed out or done)"
                )
            if entry.worker_id != worker_id:
                raise ApiError(
                    Code.BAD_REQUEST,
                    f"task '{task_id}' was sent to worker '{entry.worker_id}', not '{worker_id}'",
                )
            del self._pending[task_id]
            worker = self._workers.get(worker_id)
            if worker is not None:
                worker.last_seen = time.monotonic()  # a result is a sign of life too
        _resolve(entry, success, result, error)

    def pending(self) -> dict[str, str]:
        """``task_id -> worker_id`` of the unresolved tasks."""
        with self._lock:
            return {task_id: p.worker_id for task_id, p in self._pending.items()}

    def close(self, reason: str) -> None:
        """Refuses new tasks, fails the pending ones with ``reason``, closes the clients."""
        with self._lock:
            self._closed = True
            orphans = list(self._pending.values())
            self._pending.clear()
            clients = [w.client for w in self._workers.values()]
        self._fail(None, orphans, reason)
        for client in clients:
            client.close()
