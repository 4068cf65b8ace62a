"""The coordinator's side: serves ``/master/*`` and sends tasks to registered workers.

A task is a round trip in two HTTP calls: the master POSTs ``{task_id, name, data}`` to the
worker's ``/slave/task`` (accepted at once), and the worker later POSTs the outcome to the
master's ``/master/task_result``. :meth:`Master.send_task` waits between the two on an event
with a deadline. It never raises for a remote condition: an undeliverable task, a timeout, an
unknown or lost worker all come back as a failed :class:`TaskResult` that the caller can hand
to another worker.

A worker id belongs to one worker at a time: a registration of an id that a live worker holds
at another address gets 409 and changes nothing, so a second process started with the same
``--worker-id`` cannot silently take the first one's place. Only an id silent for longer than
the heartbeat tolerance may be taken over.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ding_lite.interaction.app import DEFAULT_MAX_BODY_BYTES, json_route, make_app
from ding_lite.interaction.auth import resolve_token
from ding_lite.interaction.client import (
    DEFAULT_TIMEOUT,
    HttpClient,
    Timeout,
    base_url,
    cap_timeout,
)
from ding_lite.interaction.envelope import ApiError, Code, RemoteError
from ding_lite.interaction.files import FilePlane
from ding_lite.interaction.protocol import (
    DEREGISTER_SCHEMA,
    HEARTBEAT_SCHEMA,
    MASTER_DEREGISTER,
    MASTER_HEARTBEAT,
    MASTER_REGISTER,
    MASTER_TASK_RESULT,
    REGISTER_SCHEMA,
    ROLES,
    SLAVE_TASK,
    TASK_RESULT_SCHEMA,
    WORKER_LOST,
    TaskResult,
    WorkerInfo,
    check_id,
    check_worker_id,
)
from ding_lite.interaction.reach import call_back
from ding_lite.interaction.roster import Roster
from ding_lite.interaction.server import THREAD_PREFIX, HttpServer, ServerError, Service
from ding_lite.utils.clock import wait_running
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger

WorkerCallback = Callable[[WorkerInfo], None]

logger = get_logger("interaction.master")

_RESOLVE_WAIT_S = 5.0  # a task taken out of the pending map is resolved within this


class Master(Service):
    """Serves ``/master/*`` and sends tasks to registered workers.

    Args:
        token: shared token; None reads ``DING_LITE_TOKEN``.
        host: interface to bind; 127.0.0.1 unless workers run on other machines.
        port: port to bind; 0 picks a free one (see :attr:`address`).
        heartbeat_tolerance: seconds without a heartbeat after which a worker is dropped, its
            pending tasks fail with "worker lost", and ``on_worker_lost`` is called.
        task_timeout: default seconds :meth:`send_task` waits for a result.
        max_body_bytes: larger request bodies get 413.
        on_register: called with the :class:`WorkerInfo` on every registration (re-registration
            included), from the master's event thread, never from a request thread.
        on_worker_lost: called with the dropped worker's info when its heartbeats stop, or when
            a registration from elsewhere takes over its id after it fell silent (not on
            deregistration), from the same event thread, before that registration's
            ``on_register``.
        client_timeout: default timeout of calls to workers, seconds or ``(connect, read)``.
        client_retries: retries of calls to workers that could not connect.
        cut_off_tolerance: seconds of silence from every worker, some on other hosts, before
            any of them is declared lost (0: judged one by one; see
            :class:`~.roster.Roster`): this host's own link cut off is not their death.
        check_callback: a registration is answered only once the master has reached the
            worker at the address it gives (a ping); one it cannot reach gets 400 naming the
            address, so a worker that advertises an address other hosts cannot dial stops at
            once with that line instead of being declared lost later.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        heartbeat_tolerance: float = 10.0,
        task_timeout: float = 60.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        on_register: WorkerCallback | None = None,
        on_worker_lost: WorkerCallback | None = None,
        client_timeout: Timeout = DEFAULT_TIMEOUT,
        client_retries: int = 3,
        cut_off_tolerance: float = 0.0,
        check_callback: bool = False,
    ) -> None:
        if heartbeat_tolerance <= 0 or task_timeout <= 0:
            raise ConfigError("heartbeat_tolerance and task_timeout must be positive seconds")
        token = resolve_token(token)
        self.heartbeat_tolerance = heartbeat_tolerance
        self.task_timeout = task_timeout
        self._on_register = on_register
        self._on_worker_lost = on_worker_lost
        self._client_timeout = client_timeout

        def make_client(address: str) -> HttpClient:
            return HttpClient(address, token, timeout=client_timeout, retries=client_retries)

        self._roster = Roster(heartbeat_tolerance, make_client, cut_off_tolerance)
        self._roster.on_pause = self._forgave_pause
        self._roster.on_cut_off = self._cut_off
        self._check_callback = check_callback
        self._token = token
        self.app = make_app("master", token, max_body_bytes)
        self._server = HttpServer(self.app, host, port, name="master")
        self.files = FilePlane(self.app, self._server, token)  #: the http data plane's
        self._events: queue.Queue[tuple[WorkerCallback, WorkerInfo] | None] = queue.Queue()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._task_threads: set[threading.Thread] = set()
        self._task_threads_lock = threading.Lock()
        json_route(self.app, MASTER_REGISTER, REGISTER_SCHEMA)(self._handle_register)
        json_route(self.app, MASTER_HEARTBEAT, HEARTBEAT_SCHEMA)(self._handle_heartbeat)
        json_route(self.app, MASTER_TASK_RESULT, TASK_RESULT_SCHEMA)(self._handle_task_result)
        json_route(self.app, MASTER_DEREGISTER, DEREGISTER_SCHEMA)(self._handle_deregister)

    # ----------------------------------------------------------------- lifecycle
    @property
    def address(self) -> str:
        """``host:port`` the master serves on (after :meth:`start`)."""
        return self._server.address

    def start(self) -> Master:
        """Starts serving, the heartbeat monitor and the callback thread. Returns self.

        Raises:
            ServerError: already started, stopped before, or the port cannot be bound.
        """
        if self._stopping.is_set():
            raise ServerError("a stopped Master cannot start again; build a new one")
        self._server.start()
        for target, suffix in ((self._monitor, "monitor"), (self._dispatch_events, "events")):
            thread = threading.Thread(
                target=target, name=f"{THREAD_PREFIX}master-{suffix}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        logger.info("master serving on %s", self.address)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stops serving, fails pending tasks ("master stopped"), joins threads (bounded).

        Safe to call twice.

        Args:
            timeout: total seconds to wait for the threads of the master.
        """
        deadline = time.monotonic() + timeout
        self._stopping.set()
        self._server.stop(timeout / 2)
        self._roster.close("master stopped")
        self._events.put(None)
        with self._task_threads_lock:
            task_threads = list(self._task_threads)
        for thread in self._threads + task_threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                logger.warning("thread %s still running after master.stop()", thread.name)
        self._threads = []

    # ------------------------------------------------------------------- queries
    def workers(self, role: str | None = None) -> list[WorkerInfo]:
        """Snapshots of the registered workers (of ``role`` if given), sorted by id."""
        return self._roster.workers(role)

    def worker_ids(self, role: str | None = None) -> list[str]:
        """Ids of the registered workers (of ``role`` if given), sorted."""
        return [info.worker_id for info in self._roster.workers(role)]

    @property
    def paused_s(self) -> float:
        """Seconds this process was noticed not running (stopped, or starved): during
        those nobody's heartbeat could be answered, so nobody was declared lost for them."""
        return self._roster.paused_s

    def restore_workers(self, workers: list[tuple[str, str, str]]) -> None:
        """Knows again ``(worker_id, role, address)`` of the workers a previous master of
        the run had registered: their heartbeats are answered as before, and one that is
        not heard from within the heartbeat tolerance is declared lost. A new process
        registering one of these ids takes it over at once."""
        self._roster.restore(workers)

    def _forgave_pause(self, seconds: float) -> None:
        logger.warning(
            "this process did not run for %.1f s (paused or starved); every worker gets a "
            "fresh %.0f s to be heard from before any is declared lost",
            seconds,
            self.heartbeat_tolerance,
        )

    @property
    def cut_off_s(self) -> float:
        """Seconds since any worker was heard from, while nobody is and some of them are
        on other hosts (this host may be cut off from them), else 0.0."""
        return self._roster.cut_off_s

    def _cut_off(self, starts: bool, seconds: float) -> None:
        if starts:
            logger.warning(
                "no worker has been heard from for %.0f s: this host may be cut off from "
                "them; none is declared lost for up to %.0f s, and no task goes out meanwhile",
                seconds,
                self._roster.cut_off_tolerance,
            )
        else:
            logger.warning(
                "workers heard from again after %.0f s of silence: every worker gets a "
                "fresh %.0f s to be heard from",
                seconds,
                self.heartbeat_tolerance,
            )

    def pending_tasks(self) -> dict[str, str]:
        """``task_id -> worker_id`` of the tasks sent and not yet resolved."""
        return self._roster.pending()

    # --------------------------------------------------------------------- tasks
    def send_task(
        self, worker_id: str, name: str, data: dict[str, Any], timeout: float | None = None
    ) -> TaskResult:
        """Sends a task to a worker and waits for its outcome.

        Args:
            worker_id: a registered worker.
            name: the task name the worker has a handler for.
            data: the task's JSON-serializable payload.
            timeout: seconds to wait for the result, delivery included; None uses
                ``task_timeout``.

        Returns:
            The worker's result; or a failed result whose ``error`` is "timed out after X s",
            "worker lost", "worker deregistered", "could not deliver task: ...",
            "unknown worker '...'" or "master stopped". A timed-out task is forgotten: its
            late result is answered with 404.

        Raises:
            ValueError: ``data`` is not JSON-serializable (nothing was sent).
        """
        timeout = self.task_timeout if timeout is None else timeout
        entry, client = self._roster.open_task(worker_id, name)
        if client is not None:
            deadline = entry.started + timeout
            body = {"task_id": entry.task_id, "name": name, "data": data}
            try:
                client.post(SLAVE_TASK, body, timeout=cap_timeout(self._client_timeout, timeout))
            except ValueError:
                self._roster.forget(entry)
                raise
            except RemoteError as e:
                self._roster.complete(entry, False, {}, f"could not deliver task: {e}")
            # Running time: a pause of this process (SIGSTOP) does not use up the timeout.
            wait_running(entry.done, max(0.0, deadline - time.monotonic()))
            self._roster.complete(entry, False, {}, f"timed out after {timeout:g} s")
        # Whoever took the entry out of the pending map resolves it, maybe a moment after
        # (a worker declared lost in another thread): wait for that, bounded.
        if not entry.done.wait(_RESOLVE_WAIT_S):
            logger.error("task %s '%s' was never resolved", entry.task_id, name)
            return TaskResult(entry.task_id, worker_id, name, False, {}, "task lost")
        assert entry.result is not None  # set before done
        return entry.result

    def send_task_async(
        self, worker_id: str, name: str, data: dict[str, Any], timeout: float | None = None
    ) -> Future[TaskResult]:
        """Like :meth:`send_task` but returns at once; the future holds the TaskResult.

        Each call runs in its own short-lived thread (e.g. one policy sync per collector), so
        a slow worker delays no other; :meth:`stop` joins them.
        """
        future: Future[TaskResult] = Future()

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(self.send_task(worker_id, name, data, timeout))
                    except BaseException as e:  # handed to the caller through the future
                        future.set_exception(e)
            finally:
                with self._task_threads_lock:
                    self._task_threads.discard(threading.current_thread())

        thread = threading.Thread(
            target=run, name=f"{THREAD_PREFIX}master-task-{worker_id}", daemon=True
        )
        with self._task_threads_lock:
            self._task_threads.add(thread)
        thread.start()
        return future

    # ----------------------------------------------------------- background work
    def _monitor(self) -> None:
        interval = min(0.5, max(0.01, self.heartbeat_tolerance / 4))
        while not self._stopping.wait(interval):
            for info in self._roster.pop_lost(WORKER_LOST):
                logger.warning(
                    "worker '%s' lost: no heartbeat for %.1f s",
                    info.worker_id,
                    time.monotonic() - info.last_seen,
                )
                if self._on_worker_lost is not None:
                    self._events.put((self._on_worker_lost, info))

    def _dispatch_events(self) -> None:
        # Callbacks run here, one at a time, so a slow one blocks neither requests nor the
        # monitor. The get has a timeout so a lost wake-up cannot hang stop().
        while True:
            try:
                item = self._events.get(timeout=0.5)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            if item is None:
                return
            callback, info = item
            try:
                callback(info)
            except Exception:
                logger.exception("callback %r failed for worker '%s'", callback, info.worker_id)

    # -------------------------------------------------------------------- routes
    def _handle_register(self, body: dict[str, Any]) -> dict[str, Any]:
        worker_id, role, address = body["worker_id"], body["role"], body["address"]
        check_worker_id("worker_id", worker_id)
        if role not in ROLES:
            raise ApiError(Code.BAD_REQUEST, f"field 'role' must be one of {ROLES}, got {role!r}")
        try:
            base_url(address)
        except ConfigError as e:
            raise ApiError(Code.BAD_REQUEST, f"field 'address': {e}") from None
        if self._check_callback:
            call_back(worker_id, address, self._token)
        try:
            info, replaced = self._roster.register(worker_id, role, address)
        except ApiError as e:
            if e.code == Code.CONFLICT:
                logger.warning("refused registration of '%s' from %s: %s", worker_id, address, e)
            raise
        if replaced is not None:
            logger.warning(
                "worker '%s' lost: silent for %.1f s, its id taken over from %s",
                worker_id,
                time.monotonic() - replaced.last_seen,
                address,
            )
            if self._on_worker_lost is not None:
                self._events.put((self._on_worker_lost, replaced))
        logger.info("worker '%s' (%s) registered at %s", worker_id, role, address)
        if self._on_register is not None:
            self._events.put((self._on_register, info))
        return {"worker_id": worker_id, "heartbeat_tolerance": self.heartbeat_tolerance}

    def _handle_heartbeat(self, body: dict[str, Any]) -> dict[str, Any]:
        check_worker_id("worker_id", body["worker_id"])
        return {"address": self._roster.heartbeat(body["worker_id"])}

    def _handle_task_result(self, body: dict[str, Any]) -> dict[str, Any]:
        check_worker_id("worker_id", body["worker_id"])
        check_id("task_id", body["task_id"])
        self._roster.submit_result(
            body["task_id"], body["worker_id"], body["success"], body["result"], body["error"]
        )
        return {}

    def _handle_deregister(self, body: dict[str, Any]) -> dict[str, Any]:
        check_worker_id("worker_id", body["worker_id"])
        self._roster.deregister(body["worker_id"], "worker deregistered")
        logger.info("worker '%s' deregistered", body["worker_id"])
        return {}
