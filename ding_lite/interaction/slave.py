"""The worker's side: serves ``/slave/*``, runs tasks one at a time, reports to the master."""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ding_lite.interaction.addresses import reachable
from ding_lite.interaction.app import DEFAULT_MAX_BODY_BYTES, json_route, make_app
from ding_lite.interaction.auth import resolve_token
from ding_lite.interaction.client import DEFAULT_TIMEOUT, HttpClient, Timeout, cap_timeout
from ding_lite.interaction.envelope import (
    ApiError,
    Code,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
)
from ding_lite.interaction.files import FilePlane
from ding_lite.interaction.protocol import (
    MASTER_DEREGISTER,
    MASTER_HEARTBEAT,
    MASTER_REGISTER,
    MASTER_TASK_RESULT,
    PING_SCHEMA,
    ROLES,
    SLAVE_PING,
    SLAVE_TASK,
    TASK_SCHEMA,
    WORKER_ID_RULE,
    check_id,
    is_valid_worker_id,
)
from ding_lite.interaction.server import THREAD_PREFIX, HttpServer, ServerError, Service
from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.log import get_logger

TaskHandler = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Takes a task's ``data``, returns its JSON-serializable result (None -> ``{}``)."""

_SEEN_TASK_IDS = 4096  # how many task ids are remembered to refuse duplicates
_DEREGISTER_TIMEOUT = (0.5, 1.0)

logger = get_logger("interaction.slave")


class RegistrationError(DingLiteError):
    """The master refused this worker or did not answer in time."""


@dataclass(frozen=True)
class _Task:
    task_id: str
    name: str
    data: dict[str, Any]


class Slave(Service):
    """Serves ``/slave/task`` and ``/slave/ping``; registers and heartbeats with the master.

    Tasks are accepted at once, queued, and run in order by one worker thread; each outcome is
    POSTed to the master's ``/master/task_result``. A handler that raises reports
    ``"ExcType: message"`` as a failed result and the slave keeps serving.

    Args:
        role: ``"learner"`` or ``"collector"``.
        worker_id: this worker's unique id (see ``protocol.WORKER_ID_RULE``); while a live
            worker holds it at another address, the master refuses it with 409.
        master_address: the master's ``host:port``.
        handlers: task name -> handler; other names are refused with 400.
        token: shared token; None reads ``DING_LITE_TOKEN``.
        host: interface to bind; 127.0.0.1 unless the master runs on another machine.
        port: port to bind; 0 picks a free one.
        advertise_address: the ``host:port`` the master should call; defaults to the bound
            one (0.0.0.0: the first interface address; set it to pick another).
        heartbeat_period: seconds between heartbeats; keep well under the master's tolerance.
        register_timeout: seconds :meth:`start` keeps trying to reach the master.
        max_body_bytes: larger request bodies get 413.
        client_timeout: timeout of calls to the master, seconds or ``(connect, read)``.
        client_retries: retries of calls to the master that could not connect.
        report_timeout: seconds a task's outcome is offered again while the master cannot
            be reached (stopped, paused or restarting); it goes to whoever answers at the
            master's address then.
        on_undelivered: called with ``(task name, result)`` for a successful outcome the
            master never took (unreachable past ``report_timeout``, or a master that does
            not know the task: a restarted coordinator), from the task thread, so the
            worker can hand what it carried over again later.
    """

    def __init__(
        self,
        role: str,
        worker_id: str,
        master_address: str,
        *,
        handlers: Mapping[str, TaskHandler],
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        advertise_address: str | None = None,
        heartbeat_period: float = 1.0,
        register_timeout: float = 10.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        client_timeout: Timeout = DEFAULT_TIMEOUT,
        client_retries: int = 3,
        report_timeout: float = 60.0,
        on_undelivered: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        if role not in ROLES:
            raise ConfigError(f"unknown role '{role}'; known: {', '.join(ROLES)}")
        if not is_valid_worker_id(worker_id):
            raise ConfigError(f"worker id must be {WORKER_ID_RULE}, got {worker_id!r}")
        if not handlers or not all(callable(h) for h in handlers.values()):
            raise ConfigError("handlers must map at least one task name to a callable")
        if heartbeat_period <= 0 or register_timeout <= 0:
            raise ConfigError("heartbeat_period and register_timeout must be positive seconds")
        token = resolve_token(token)
        self.role = role
        self.worker_id = worker_id
        self.heartbeat_period = heartbeat_period
        self.register_timeout = register_timeout
        self.report_timeout = report_timeout
        self.on_undelivered = on_undelivered  #: (see above; its worker may set it later)
        self._handlers = dict(handlers)
        self._advertise_address = advertise_address
        self._client = HttpClient(
            master_address, token, timeout=client_timeout, retries=client_retries
        )
        self._client_timeout = client_timeout
        self.app = make_app(f"slave-{worker_id}", token, max_body_bytes)
        self._server = HttpServer(self.app, host, port, name=f"slave-{worker_id}")
        self.files = FilePlane(self.app, self._server, token, master_address)  #: data plane
        self._tasks: queue.Queue[_Task | None] = queue.Queue()
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._seen_lock = threading.Lock()
        self._stopping = threading.Event()
        self._registered = False
        self._heartbeat_thread: threading.Thread | None = None
        #: ``time.monotonic()`` of the last registration or heartbeat the master answered.
        self.last_contact = time.monotonic()
        #: Why the master refused this worker after it had started (another process took
        #: over its id while it was silent), or None. Heartbeats stop once it is set, so
        #: :attr:`last_contact` stops advancing; the owner of the slave should then stop it.
        self.evicted: str | None = None
        self._worker_thread: threading.Thread | None = None
        json_route(self.app, SLAVE_TASK, TASK_SCHEMA)(self._handle_task)
        json_route(self.app, SLAVE_PING, PING_SCHEMA)(self._handle_ping)

    # ----------------------------------------------------------------- lifecycle
    @property
    def address(self) -> str:
        """The ``host:port`` the master calls (after :meth:`start`): the advertised one, else
        the bound one, a wildcard (``--host 0.0.0.0``) as this machine's first non-loopback
        interface address, one the other hosts can dial."""
        return self._advertise_address or reachable(self._server.address)[0]

    def queued_tasks(self) -> int:
        """Tasks accepted and not yet started."""
        return self._tasks.qsize()

    def start(self) -> Slave:
        """Serves, starts the task thread, registers with the master, starts heartbeats.

        Raises:
            RegistrationError: the master refused the registration (another token, or the
                id is in use by a live worker elsewhere: 409), or did not answer within
                ``register_timeout``; everything started is stopped.
            ServerError: already started, stopped before, or the port cannot be bound.
        """
        if self._stopping.is_set():
            raise ServerError("a stopped Slave cannot start again; build a new one")
        self._server.start()
        self._worker_thread = self._spawn(self._work, "worker")
        try:
            self._register(time.monotonic() + self.register_timeout)
        except BaseException:
            self.stop(deregister=False)
            raise
        self._registered = True
        self._heartbeat_thread = self._spawn(self._heartbeat, "heartbeat")
        logger.info("%s '%s' serving on %s", self.role, self.worker_id, self.address)
        return self

    def stop(self, timeout: float = 5.0, deregister: bool = True) -> None:
        """Stops heartbeats, the server and the task thread (bounded joins), then deregisters.

        A task still running after ``timeout`` keeps its (daemon) thread; queued tasks are
        dropped and fail on the master when the worker deregisters or is declared lost.

        Args:
            timeout: total seconds to wait for the slave's threads.
            deregister: tell the master this worker is leaving (best effort, short timeout);
                False leaves the master to notice the missing heartbeats. An evicted worker
                never deregisters (its id is another process's now).
        """
        deadline = time.monotonic() + timeout
        self._stopping.set()
        self._tasks.put(None)
        self._server.stop(timeout / 2)
        for thread in (self._heartbeat_thread, self._worker_thread):
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    logger.warning("thread %s still running after slave.stop()", thread.name)
        # An evicted worker's id belongs to another process now: leave it registered.
        if deregister and self._registered and self.evicted is None:
            try:
                self._client.post(
                    MASTER_DEREGISTER, {"worker_id": self.worker_id}, timeout=_DEREGISTER_TIMEOUT
                )
            except RemoteError as e:
                logger.info("could not deregister '%s' (ignored): %s", self.worker_id, e)
        self._registered = False
        self._client.close()

    def _spawn(self, target: Callable[[], None], suffix: str) -> threading.Thread:
        name = f"{THREAD_PREFIX}slave-{self.worker_id}-{suffix}"
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    # ------------------------------------------------------------ master calls
    def _register_body(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "role": self.role, "address": self.address}

    def _register(self, deadline: float) -> None:
        delay = 0.05
        while True:
            remaining = deadline - time.monotonic()
            try:
                self._client.post(
                    MASTER_REGISTER,
                    self._register_body(),
                    timeout=cap_timeout(self._client_timeout, remaining),
                )
                return
            except (RemoteUnreachable, RemoteTimeout) as e:
                last_error = e
            except RemoteError as e:
                hint = ""
                if e.code == Code.UNAUTHORIZED:
                    hint = "; give the master and every worker the same token"
                raise RegistrationError(
                    f"master at {self._client.base_url} refused {self.role} "
                    f"'{self.worker_id}': {self._master_says(e)}{hint}"
                ) from e
            if time.monotonic() + delay >= deadline or self._stopping.is_set():
                raise RegistrationError(
                    f"master at {self._client.base_url} did not answer within "
                    f"{self.register_timeout:g} s ({last_error}); is it running and reachable?"
                ) from last_error
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _master_says(self, error: RemoteError) -> str:
        # The client prefixes the master's message with the request; the user needs only
        # the message.
        return error.message.removeprefix(f"POST {self._client.base_url}{MASTER_REGISTER}: ")

    def _evict(self, reason: str) -> None:
        # One line, then silence: no more heartbeats, so ``last_contact`` stops advancing and
        # a loop watching it (``run_worker``'s master timeout) ends the process.
        self.evicted = reason
        logger.error("%s '%s' stops its heartbeats: %s", self.role, self.worker_id, reason)

    def _heartbeat(self) -> None:
        failing = False
        # A heartbeat stuck for long is as good as lost, and must not hold up stop().
        beat_timeout = cap_timeout(self._client_timeout, max(1.0, 2 * self.heartbeat_period))
        while not self._stopping.wait(self.heartbeat_period):
            try:
                try:
                    answer = self._client.post(
                        MASTER_HEARTBEAT, {"worker_id": self.worker_id}, timeout=beat_timeout
                    )
                    holder = answer.get("address", self.address)
                    if holder != self.address:
                        # We were silent, another process took our id over, and this beat
                        # reached its entry: the id is no longer ours.
                        self._evict(
                            f"worker id '{self.worker_id}' is in use by a live {self.role} at "
                            f"{holder}; pick another --worker-id"
                        )
                        return
                except RemoteError as e:
                    if e.code != Code.NOT_FOUND:
                        raise
                    # The master forgot us (restart, or we were declared lost): come back.
                    logger.warning("master does not know '%s'; registering again", self.worker_id)
                    try:
                        self._client.post(
                            MASTER_REGISTER, self._register_body(), timeout=beat_timeout
                        )
                    except RemoteError as refused:
                        if refused.code != Code.CONFLICT:
                            raise
                        # Another live process holds our id now. Taking it back would steal
                        # its tasks, so this worker bows out.
                        self._evict(self._master_says(refused))
                        return
                self.last_contact = time.monotonic()
                if failing:
                    logger.info("heartbeats of '%s' reach the master again", self.worker_id)
                failing = False
            except RemoteError as e:
                if not failing:  # log the first failure of a streak, not one per period
                    logger.warning("heartbeat of '%s' failed: %s", self.worker_id, e)
                failing = True

    # ------------------------------------------------------------------ tasks
    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                task = self._tasks.get(timeout=0.5)
            except queue.Empty:
                continue
            if task is None:
                return
            self._report(task, *self._run(task))

    def _run(self, task: _Task) -> tuple[bool, dict[str, Any], str]:
        try:
            result = self._handlers[task.name](task.data)
            if result is None:
                result = {}
            if not isinstance(result, dict):
                raise TypeError(
                    f"handler of '{task.name}' returned {type(result).__name__}, expected a dict"
                )
            return True, result, ""
        except DingLiteError as e:  # a message for the user: one line
            logger.warning("task %s '%s' failed: %s", task.task_id, task.name, e)
            return False, {}, f"{type(e).__name__}: {e}"
        except Exception as e:  # a bug: its traceback
            logger.warning("task %s '%s' failed", task.task_id, task.name, exc_info=True)
            return False, {}, f"{type(e).__name__}: {e}"

    def _report(self, task: _Task, success: bool, result: dict[str, Any], error: str) -> None:
        body = {
            "task_id": task.task_id,
            "worker_id": self.worker_id,
            "success": success,
            "result": result,
            "error": error,
        }
        deadline = time.monotonic() + self.report_timeout
        delay = 0.1
        while True:
            try:
                try:
                    self._client.post(MASTER_TASK_RESULT, body)
                except ValueError as e:  # the result is not JSON: report that instead
                    body.update(success=False, result={}, error=f"TypeError: {e}")
                    self._client.post(MASTER_TASK_RESULT, body)
                return
            except (RemoteUnreachable, RemoteTimeout) as e:
                # The master is down, paused or restarting: offer it again until it answers.
                if self._stopping.is_set() or time.monotonic() + delay > deadline:
                    logger.warning("could not report task %s '%s': %s", task.task_id, task.name, e)
                    break
                if delay == 0.1:
                    logger.warning("master unreachable; the result of '%s' waits", task.name)
                self._stopping.wait(delay)
                delay = min(delay * 2, 2.0)
            except RemoteError as e:
                # E.g. 404: the master gave up on the task (timeout), or is a restarted one.
                logger.warning("could not report task %s '%s': %s", task.task_id, task.name, e)
                break
        if body["success"] and self.on_undelivered is not None:
            try:
                self.on_undelivered(task.name, result)
            except Exception:
                logger.exception("taking back the result of '%s' failed", task.name)

    # -------------------------------------------------------------------- routes
    def _handle_task(self, body: dict[str, Any]) -> dict[str, Any]:
        task_id, name = body["task_id"], body["name"]
        check_id("task_id", task_id)
        if name not in self._handlers:
            raise ApiError(
                Code.BAD_REQUEST,
                f"unknown task '{name}'; this {self.role} handles: "
                f"{', '.join(sorted(self._handlers))}",
            )
        with self._seen_lock:
            if task_id in self._seen:
                raise ApiError(Code.CONFLICT, f"task '{task_id}' was already received")
            self._seen[task_id] = None
            if len(self._seen) > _SEEN_TASK_IDS:
                self._seen.popitem(last=False)
            self._tasks.put(_Task(task_id, name, body["data"]))
        return {"queued": self._tasks.qsize()}

    def _handle_ping(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "role": self.role, "time": time.time()}
