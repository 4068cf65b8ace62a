"""``ding-lite parallel``'s supervisor: the coordinator as a child process, restarted when it
dies, and the workers as children of the supervisor, so they outlive it.

The supervisor picks the coordinator's address once; every coordinator it starts serves
there, so the workers' heartbeats reach the new one as they reached the old. A coordinator
(``ding-lite coordinator --supervised FD``) keeps its state in the run dir
(:mod:`ding_lite.coordinator.recovery`); its successor takes the run back from it. A
coordinator that dies before the run's end (killed, crashed) is restarted under the same
budget and backoff as the workers (``system.max_restarts``, shared). One that ended the
run (its result.json written, well formed) or was interrupted is
not. Ctrl-C and SIGTERM reach the coordinator through the supervisor, which keeps serving
it until it has closed the run, then stops the workers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.coordinator.recovery import RecoveryError, RecoveryFile
from ding_lite.entry.launch.link import LinkServer
from ding_lite.entry.launch.local import Launcher
from ding_lite.entry.run.lifecycle import RESULT_FILE
from ding_lite.entry.run.result import read_result
from ding_lite.interaction.addresses import reachable
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.log import get_logger
from ding_lite.utils.ports import free_port

READY_TIMEOUT_S = 120.0  # a coordinator process must serve within this (imports included)
SERVE_SLICE_S = 0.05  # the supervisor's loop: link requests, then children, this often


class CoordinatorFailed(DingLiteError):
    """The coordinator could not be started, or died with no restart left (exit 1: the
    run failed; its last figures are in the coordinator's state file and logs)."""

    exit_code = 1


class CoordinatorChild:
    """One coordinator process and the supervisor's end of its link."""

    def __init__(
        self, command: list[str], env: dict[str, str], log: Path, keep_fds: tuple[int, ...]
    ) -> None:
        parent, child = socket.socketpair()
        out = open(log, "ab")  # noqa: SIM115 (the child owns it): tracebacks go to the log
        try:
            self.proc = subprocess.Popen(
                [*command, "--supervised", str(child.fileno())],
                stderr=out,
                env=env,
                pass_fds=(child.fileno(), *keep_fds),
                start_new_session=True,  # Ctrl-C reaches it through the supervisor
            )
        finally:
            out.close()
            child.close()
        self.sock = parent
        self.link: LinkServer | None = None

    def exited(self) -> int | None:
        return self.proc.poll()

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)
        self.sock.close()


class RunSupervisor:
    """Runs one parallel run: the coordinator child, the launcher's workers, restarts.

    Args:
        cfg: the resolved config (its run dir prepared and locked by the caller).
        launcher_cls: the launcher class (local processes or Ray actors).
        token: the run's token (handed to children in their environment).
        register: a Python config file every child runs first, or None.
        quiet: the coordinator prints no status lines.
        lock_fd: the run dir's lock: the coordinator inherits it, so the dir stays locked
            while a coordinator of the run lives, even one whose supervisor was killed.
    """

    def __init__(
        self,
        cfg: Any,
        launcher_cls: type[Launcher],
        token: str,
        register: str | None = None,
        quiet: bool = False,
        lock_fd: int | None = None,
    ) -> None:
        self.cfg, self.token, self.register, self.quiet = cfg, token, register, quiet
        self.keep_fds = () if lock_fd is None else (lock_fd,)
        self.run_path = Path(cfg.exp_dir)
        self.log_dir = self.run_path / "logs"
        host, port = cfg.system.host, cfg.system.coordinator_port
        port = free_port(host) if port == "auto" else int(port)
        # What the workers dial: bound to every interface (0.0.0.0), the machine's first
        # interface address, which workers on other nodes (Ray actors) can reach too.
        self.address = reachable(f"{host}:{port}")[0]
        self.launcher = launcher_cls(cfg, self.address, token, self.log_dir, register)
        self.recovery = RecoveryFile(self.run_path)
        self.child: CoordinatorChild | None = None
        self._ready = False
        self._iteration_at_start = -1  # the run's iteration when the coordinator started
        self._idle_deaths = 0  # coordinators in a row that died without moving the run on
        self._logger = get_logger("launcher")
        self._earlier_result = _identity(self.run_path / RESULT_FILE)  # a resumed run's

    # --- the coordinator process ---------------------------------------------------------
    def _start_coordinator(self) -> None:
        command = [
            sys.executable,
            "-m",
            "ding_lite",
            "coordinator",
            "--resume",
            str(self.run_path),
            "--port",
            self.address.rsplit(":", 1)[1],
            *(["-c", self.register] if self.register else []),
            *(["-q"] if self.quiet else []),
        ]
        env = dict(os.environ, DING_LITE_TOKEN=self.token)
        self._ready = False
        self._iteration_at_start = self._saved_iteration()
        self.child = CoordinatorChild(command, env, self.log_dir / "coordinator.log", self.keep_fds)
        self.child.link = LinkServer(self.child.sock, self.launcher, self._on_ready)

    def _on_ready(self, address: str) -> None:
        self._ready = True

    def _serve(self) -> None:
        """One turn: the coordinator's requests, then the workers' processes."""
        assert self.child is not None and self.child.link is not None
        self.child.link.serve(SERVE_SLICE_S)
        self.launcher.poll()

    def _saved_iteration(self) -> int:
        """The run's iteration in the coordinator's saved state (-1: none)."""
        try:
            state = self.recovery.load() or {}
        except RecoveryError:
            return -1
        iteration = (state.get("status") or {}).get("train_iter", -1)
        return iteration if isinstance(iteration, int) else -1

    def result(self) -> dict[str, Any] | None:
        """The run's result, once a coordinator of this run wrote it: ``result.json`` there,
        well formed, and not the file an earlier run left (a resumed run's). What the
        coordinator's state file says (its ``phase``) is not believed: it may be damaged."""
        path = self.run_path / RESULT_FILE
        if _identity(path) == self._earlier_result:
            return None
        return read_result(path)

    def finished(self) -> bool:
        """Whether a coordinator ended the run (see :meth:`result`)."""
        return self.result() is not None

    # --- the run -------------------------------------------------------------------------
    def run(self, say: Callable[..., Any]) -> bool:
        """Runs until the coordinator ends the run; returns whether it was interrupted
        (Ctrl-C or SIGTERM). The caller reads result.json.

        Raises:
            CoordinatorFailed: no coordinator could serve, or none is left to restart.
        """
        self.recovery.discard()  # this run starts afresh (a --resume from its checkpoint)
        interrupted: int | None = None
        try:
            self._start_coordinator()
            # The workers start beside it: their registration waits for it (up to their
            # master timeout), so both start-ups overlap.
            self.launcher.start_all()
            self._wait_ready()
            say(f"coordinator at {self.address}; logs in {self.log_dir}", flush=True)
            while True:
                try:
                    if self._supervise_once(interrupted):
                        return interrupted is not None
                except KeyboardInterrupt:
                    if interrupted is not None:  # a second one: stop at once
                        raise
                    interrupted = signal.SIGINT
                    assert self.child is not None
                    self.child.signal(signal.SIGINT)  # it closes the run and exits
        finally:
            if self.child is not None:
                self.child.kill()
            self.launcher.stop_all()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert self.child is not None
        while not self._ready:
            self._serve()
            if self.child.exited() is not None:
                raise CoordinatorFailed(
                    f"the coordinator exited with code {self.child.exited()} before it "
                    f"served; see {self.log_dir / 'coordinator.log'}"
                )
            if time.monotonic() > deadline:
                raise CoordinatorFailed(f"the coordinator did not serve within {READY_TIMEOUT_S} s")

    def _supervise_once(self, interrupted: int | None) -> bool:
        """One turn of the loop; True once the run is over."""
        assert self.child is not None
        self._serve()
        code = self.child.exited()
        if code is None:
            return False
        if interrupted is not None or self.finished():
            return True
        reason = f"exited with code {code}" if code >= 0 else f"was killed ({-code})"
        # The backoff is for a coordinator that keeps dying without moving the run on (a
        # crash loop); one that trained iterations died afresh, and starts over at 0.5 s.
        moved_on = self._saved_iteration() > self._iteration_at_start
        self._idle_deaths = 1 if moved_on else self._idle_deaths + 1
        delay = self.launcher.restart_coordinator(reason, self._idle_deaths)
        if delay is None:
            raise CoordinatorFailed(f"the coordinator {reason} and no restart is left")
        self.child.kill()
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:  # the workers' restarts go on meanwhile
            self.launcher.poll()
            time.sleep(SERVE_SLICE_S)
        self._start_coordinator()
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file ``path`` is (its inode and change time; None: none): a result written
    since (atomically, under a new inode) is another."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns
