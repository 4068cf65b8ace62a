"""The line between ``ding-lite parallel``'s supervisor and the coordinator it runs as a child.

The supervisor owns the workers (the launcher), so they outlive a coordinator that dies;
the coordinator still decides when a worker is lost or failed. They talk over a socket pair
the child inherits: one JSON object per line, one request at a time, each answered, with a
timeout. The child asks (:class:`SupervisorLink`, the coordinator's ``Restarter``), the
parent answers (:class:`LinkServer`). A child whose supervisor is gone (the link closed or
silent) ends its run as interrupted, so killing ``ding-lite parallel`` still ends the run.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from ding_lite.utils.log import get_logger

# The supervisor answers between its other work, which may take a while (starting Ray
# actors, killing a worker): a closed socket means it is gone, a slow answer only slow.
ANSWER_TIMEOUT_S = 120.0
STATE_REFRESH_S = 0.05  # the child's view of which workers are gone is at most this old
MAX_LINE = 1 << 20


class LinkClosed(ConnectionError):
    """The other end of the link is gone."""


class _Lines:
    """JSON lines over a connected stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError as err:
            raise LinkClosed(f"link closed: {err}") from None

    def receive(self, timeout: float | None) -> dict[str, Any] | None:
        """The next message; None when none came within ``timeout`` (None: wait)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            try:
                chunk = self.sock.recv(65536)
            except OSError as err:
                raise LinkClosed(f"link closed: {err}") from None
            if not chunk:
                raise LinkClosed("link closed by the other end")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE:
                raise LinkClosed("link message too long")
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise LinkClosed("link message is not an object")
        return message

    def close(self) -> None:
        self.sock.close()


class SupervisorLink:
    """The coordinator's supervisor, in the coordinator's process: the launcher's answers,
    asked over the link.

    Args:
        fd: the child's end of the socket pair (inherited from the supervisor).
        on_lost: called once when the supervisor is gone (the run should end).
    """

    def __init__(self, fd: int, on_lost: Callable[[], None] | None = None) -> None:
        self._lines = _Lines(socket.socket(fileno=fd))
        self._lock = threading.Lock()
        self.on_lost = on_lost
        self.lost = False
        self.restarts = 0
        self.coordinator_restarts = 0  # the supervisor's count (this one's number)
        self._gone: set[str] = set()
        self._pending: dict[str, int] = {}
        self._next_refresh = 0.0
        self._registered: frozenset[str] = frozenset()
        self._logger = get_logger("coordinator")

    def _ask(self, op: str, *args: Any) -> Any:
        if self.lost:
            return None
        with self._lock:
            try:
                self._lines.send({"op": op, "args": list(args)})
                answer = self._lines.receive(ANSWER_TIMEOUT_S)
                if answer is None:
                    raise LinkClosed(f"the supervisor did not answer within {ANSWER_TIMEOUT_S} s")
            except (LinkClosed, ValueError) as err:
                self._lose(str(err))
                return None
        self._take_state(answer.get("state"))
        return answer.get("value")

    def _lose(self, why: str) -> None:
        if not self.lost:
            self.lost = True
            self._logger.error(f"the supervisor (ding-lite parallel) is gone ({why}); stopping")
            if self.on_lost is not None:
                self.on_lost()

    def _take_state(self, state: Any) -> None:
        if isinstance(state, dict):
            self.restarts = int(state.get("restarts", self.restarts))
            self.coordinator_restarts = int(state.get("coordinator_restarts", 0))
            self._gone = set(state.get("gone", []))
            self._pending = dict(state.get("pending", {}))
            self._next_refresh = time.monotonic() + STATE_REFRESH_S

    # --- what the coordinator asks (the ``Restarter`` protocol) ---------------------------
    def ready(self, address: str) -> None:
        """Tells the supervisor the coordinator serves at ``address``."""
        self._ask("ready", address)

    def poll(self) -> None:
        if time.monotonic() >= self._next_refresh:
            self._ask("state")

    def worker_failed(self, worker_id: str, role: str, reason: str) -> bool:
        return bool(self._ask("worker_failed", worker_id, role, reason))

    def pending(self, role: str) -> int:
        return int(self._pending.get(role, 0))

    def retire(self, worker_id: str) -> None:
        self._ask("retire", worker_id)

    def closing(self) -> None:
        self._ask("closing")

    # --- what the transport asks (LauncherTransport) ---------------------------------------
    def alive(self, worker_id: str) -> bool:
        return worker_id not in self._gone

    def mark_registered(self, worker_ids: list[str]) -> None:
        ids = frozenset(worker_ids)
        if not ids <= self._registered:
            self._registered |= ids
            self._ask("registered", sorted(ids))

    def worker_lost(self, worker_id: str) -> None:
        self._ask("worker_lost", worker_id)

    def close(self) -> None:
        self._lines.close()


class LinkServer:
    """The supervisor's end: answers the coordinator's requests with the launcher.

    Args:
        sock: the parent's end of the socket pair.
        launcher: the run's :class:`~ding_lite.entry.launch.local.Launcher`.
        on_ready: called with the coordinator's address when it says it serves.
    """

    def __init__(
        self, sock: socket.socket, launcher: Any, on_ready: Callable[[str], None] | None = None
    ) -> None:
        self._lines = _Lines(sock)
        self.launcher = launcher
        self.on_ready = on_ready
        self.closed = False

    def serve(self, timeout: float) -> None:
        """Answers the requests that come within ``timeout`` seconds (at least one wait)."""
        if self.closed:
            time.sleep(timeout)
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._lines.receive(max(deadline - time.monotonic(), 0.0))
            except (LinkClosed, ValueError):
                self.closed = True  # the coordinator died; the supervisor sees its exit
                return
            if message is None:
                return
            try:
                value = self._answer(str(message.get("op")), list(message.get("args") or []))
                self._lines.send({"value": value, "state": self.state()})
            except LinkClosed:
                self.closed = True
                return

    def _answer(self, op: str, args: list[Any]) -> Any:
        launcher = self.launcher
        if op == "ready":
            if self.on_ready is not None:
                self.on_ready(str(args[0]))
        elif op == "worker_failed":
            return launcher.worker_failed(str(args[0]), str(args[1]), str(args[2]))
        elif op == "retire":
            launcher.retire(str(args[0]))
        elif op == "closing":
            launcher.closing()
        elif op == "registered":
            launcher.mark_registered([str(a) for a in args[0]])
        elif op == "worker_lost":
            launcher.worker_lost(str(args[0]))
        return None

    def state(self) -> dict[str, Any]:
        launcher = self.launcher
        return {
            "restarts": launcher.restarts,
            "coordinator_restarts": launcher.coordinator_restarts,
            "gone": [w for w in launcher.procs if not launcher.alive(w)],
            "pending": {role: launcher.pending(role) for role in ("learner", "collector")},
        }

    def close(self) -> None:
        self._lines.close()
