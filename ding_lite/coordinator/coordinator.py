"""The coordinator: runs the task protocol between learners and collectors.

It moves metadata only (file paths, policy versions, sizes). Collectors report the rollout
files they wrote and a periodic scan adopts the ones nobody reported; the coordinator hands
the learner a batch's worth per ``learner_learn_task`` and books the learner's verdict on
every file in the ledger; each new policy version goes to every collector. No run waits for
ever: a progress watchdog ends a run that cannot progress, naming what it waited for, and a
lost or failed worker is handed to the supervisor (the launcher), which restarts it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.config.config import to_plain
from ding_lite.coordinator import recovery
from ding_lite.coordinator.checks import (
    ResultError,
    check_best,
)
from ding_lite.coordinator.collectors import CollectorPool
from ding_lite.coordinator.learner_side import LearnerSide
from ding_lite.coordinator.ledger import RolloutLedger
from ding_lite.coordinator.recovery import RECOVERY_FILE, RecoveryError, RecoveryFile
from ding_lite.coordinator.status import RunStatus
from ding_lite.coordinator.watchdog import Watchdog
from ding_lite.coordinator.workers import Supervisor, Transport
from ding_lite.utils import stop
from ding_lite.utils.log import get_logger

SCAN_INTERVAL_S = 1.0  # how often path_data is scanned for files nobody reported
ADOPT_AFTER_S = 2.0  # a file is adopted once it is this old and still unreported


class Coordinator(LearnerSide):
    """Drives one run of the parallel pipeline.

    Args:
        cfg: the resolved config (sent to every worker in its start task).
        transport: the task transport.
        on_status: called with the :class:`RunStatus` after every iteration.
        supervisor: restarts lost or failed workers; None drops them.
        recovery: where the state is kept for a restarted coordinator (None: nowhere).
        address: the master's ``host:port`` (saved with the state).
    """

    def __init__(
        self,
        cfg: Any,
        transport: Transport,
        on_status: Callable[[RunStatus], None] | None = None,
        supervisor: Supervisor | None = None,
        recovery: RecoveryFile | None = None,
        address: str = "",
    ) -> None:
        self.cfg = cfg
        self.transport = transport
        self.on_status = on_status
        self.supervisor = supervisor
        self.status = RunStatus()
        self.logger = get_logger("coordinator")
        self.config = to_plain(cfg)
        run_dir = Path(cfg.exp_dir or cfg.exp_name)
        self.path_data = Path(cfg.system.path_data or run_dir / "data")
        self.path_policy = Path(cfg.system.path_policy or run_dir / "policy")
        self.rollouts = RolloutLedger(self.path_data, on_reject=self._rejected_path)
        self.collectors = CollectorPool(self)
        self.watchdog = Watchdog(cfg.system.stall_timeout)
        self.learner: str | None = None
        self._bad_learners: set[str] = set()  # "<id>@<address>" of learners that failed
        self._learner_failures = 0
        self._policy: tuple[str, int, float] = ("", 0, 0.0)
        self._envstep_base = 0
        self._stop_requested: str | None = None
        self._no_collectors_since: float | None = None
        self._next_scan = 0.0
        self.batch_size = 1
        #: Seconds each close task may take (shortened to 5 s on Ctrl-C).
        self.close_timeout = cfg.system.task_timeout
        # What a restarted coordinator takes back (see :mod:`.recovery`).
        self.recovery, self.address = recovery, address
        self.phase = "running"  # then "closing", "closed" (result due), "finished"
        self.started_at = time.time()  # the run's start (a restarted coordinator's too)
        self.cpu_before = 0.0  # CPU seconds of the run's earlier coordinator processes
        self.inflight: dict[str, Any] | None = None  # the learn task on its way, if any
        self.restored = False
        #: The address each started worker served at: the same id at another address is a
        #: new process (it restarted, or took over the id of one that died), not started.
        self.addresses: dict[str, str] = {}
        self._paused_seen = 0.0
        self._save_failed = False

    def restore(self, state: dict[str, Any]) -> None:
        """Takes the run back from a previous coordinator's saved state (see
        :mod:`.recovery`); counts a coordinator restart.

        Raises:
            RecoveryError: the state is damaged (nothing was changed).
        """
        try:
            recovery.restore(self, state)
        except (TypeError, ValueError) as err:
            raise RecoveryError(f"{RECOVERY_FILE}: {err}") from None
        self.restored = True
        self.status.coordinator_restarts += 1
        self.watchdog.restart_clock()
        waiting = self.rollouts.live()
        self.logger.warning(
            f"took the run back at policy v{self._policy[1]}, iteration "
            f"{self.status.train_iter} (coordinator restart {self.status.coordinator_restarts}"
            f"); learner {self.learner}, {len(self.collectors.running())} collector(s) "
            f"expected back; {waiting['waiting']} rollout(s) waiting, "
            f"{waiting['in_learner']} in the learner"
        )

    def save(self, kind: str) -> None:
        """Saves the state for a restarted coordinator (a failed write is logged once and
        never ends the run)."""
        if self.recovery is None:
            return
        try:
            self.recovery.save(recovery.snapshot(self), kind)
        except OSError as err:
            if not self._save_failed:
                self.logger.warning(f"cannot save the coordinator's state ({err}); going on")
            self._save_failed = True

    def request_stop(self, reason: str) -> None:
        """Ends the run after the current step (one assignment: safe from other threads)."""
        self._stop_requested = reason

    def run(self, wait_workers: float = 120.0) -> RunStatus:
        """Runs until solved, a limit, a stop request or a failure it cannot recover from."""
        self.join_timeout = wait_workers
        try:
            if self.phase != "running":
                pass  # taken back while closing: close
            elif self.restored and self.learner is not None:
                self.collectors.sync(self._policy)  # a sync may have been lost on the way
                self._loop()
            elif self._connect_learner(resume=self.restored):
                self._loop()
        except KeyboardInterrupt:
            self.stop_run(stop.INTERRUPTED)
            self.close_timeout = min(self.close_timeout, 5.0)
            raise
        finally:
            self._close()
        return self.status

    def _loop(self) -> None:
        while not self._should_stop():
            self.collectors.start_new(self._policy)
            self.collectors.poll()
            self._scan()
            if self.status.solved:
                self.stop_run(stop.SOLVED)
                break
            ready = self.rollouts.samples >= self._demand() or self.inflight is not None
            if ready and self.learner is not None:
                self._learn()
                if self.on_status is not None:
                    self.on_status(self.status)
            else:
                time.sleep(0.002)
            if self.recovery is not None and self.recovery.periodic_due():
                self.save("periodic")

    # --- stopping ------------------------------------------------------------------------
    def stop_run(self, reason: str, detail: str = "") -> None:
        """Ends the run with ``reason`` (the first reason given stays the run's)."""
        if self.status.stop_reason is None:
            self.status.stop_reason, self.status.stop_detail = reason, detail
            if detail:
                self.logger.error(f"stopping ({reason}): {detail}")

    def _should_stop(self) -> bool:
        if self.supervisor is not None:
            self.supervisor.poll()
        learners = self.transport.worker_ids("learner")  # notices a pause of this process
        self._forgive_pause()
        if self._stop_requested:
            self.stop_run(self._stop_requested)
        elif self.learner is not None and self.learner not in learners:
            self._recover_learner("lost: no heartbeat, or its process ended")
        elif self.learner is not None and self.is_new_process(
            self.learner, self.where("learner").get(self.learner)
        ):
            self._recover_learner("was replaced by a new process with its id", blame=False)
        elif self._no_collectors_for() > 2 * self.cfg.system.heartbeat_tolerance:
            self.stop_run(stop.NO_COLLECTORS, "no collector is left and none is coming back")
        elif self.watchdog.stalled():
            self.stop_run(
                stop.STALLED,
                f"no iteration for {self.watchdog.silent_for():.0f} s (limit "
                f"{self.watchdog.limit:.0f} s); waiting on {self.waiting_on()}",
            )
        return self.status.stop_reason is not None or self.status.done

    def where(self, role: str) -> dict[str, str]:
        """Worker id -> address of the registered workers of ``role``."""
        return {w.worker_id: w.address for w in self.transport.workers(role)}

    def is_new_process(self, worker_id: str, address: str | None) -> bool:
        """Whether a started worker now registered at ``address`` is another process."""
        started = self.addresses.get(worker_id)
        return started is not None and address is not None and address != started

    def _forgive_pause(self) -> None:
        """After a pause of this process (the master noticed it), the watchdogs start
        afresh: the time it did not run is nobody's fault."""
        paused = getattr(self.transport, "paused_s", 0.0)
        if paused != self._paused_seen:
            self._paused_seen = paused
            self.watchdog.restart_clock()
            self._no_collectors_since = None

    def _no_collectors_for(self) -> float:
        pending = self.supervisor.pending("collector") if self.supervisor else 0
        if self.collectors.running() or pending or self.collectors.any_unstarted():
            self._no_collectors_since = None
            return 0.0
        if self._no_collectors_since is None:
            self._no_collectors_since = time.monotonic()
        return time.monotonic() - self._no_collectors_since

    def waiting_on(self) -> str:
        """What the run waits for right now (the watchdog names it when the run stalls)."""
        if self.learner is None:
            return "a learner to register"
        if self.rollouts.samples < self._demand():
            who = ", ".join(self.collectors.running()) or "no running collector"
            return f"rollouts from {who} ({self.rollouts.samples}/{self._demand()} samples)"
        return f"learner {self.learner}"

    # --- collectors' side ----------------------------------------------------------------
    def worker_failed(self, worker_id: str, role: str, reason: str) -> None:
        """A collector is lost or failed: the supervisor replaces it (under a fresh id)."""
        if self.supervisor is not None:
            self.supervisor.worker_failed(worker_id, role, reason)
            self.status.restarts = self.supervisor.restarts

    def retire(self, worker_id: str, role: str) -> None:
        """Drops a worker for good and closes it, so its process exits instead of idling."""
        if self.supervisor is not None:
            self.supervisor.retire(worker_id)
        self.transport.send_task_async(
            worker_id, f"{role}_close_task", {"final_eval": False}, self.close_timeout
        )

    def _rejected_path(self, path: str, why: str) -> None:
        self.logger.warning(f"refused the rollout {path!r}: {why}")

    def _scan(self) -> None:
        if time.monotonic() >= self._next_scan:
            self._next_scan = time.monotonic() + SCAN_INTERVAL_S
            adopted = self.rollouts.adopt(min_age=ADOPT_AFTER_S)
            if adopted:
                self.logger.info(f"adopted {adopted} rollout file(s) nobody reported")
            self.rollouts.drop_missing()
        self.status.envstep = self._envstep_base + sum(self.collectors.envsteps.values())

    # --- the end -------------------------------------------------------------------------
    def _close(self) -> None:
        if self.phase == "closed":  # taken back after the close: only the result is left
            return
        if self.phase != "closing":  # (a coordinator taken back while closing goes on)
            self.phase = "closing"
            self.save("close")
        closing = getattr(self.supervisor, "closing", None)
        if closing is not None:  # workers that exit from now on are done, not failed
            closing()
        final_eval = not self.status.solved
        self.collectors.close(self.close_timeout, final_eval)
        self.rollouts.adopt()
        self.status.envstep = self._envstep_base + sum(self.collectors.envsteps.values())
        leftovers = self.rollouts.take_all()
        # Saved as handed before the learner deletes them: a coordinator taken back after
        # that books the missing ones as dropped at the run's end, as this one would.
        self.save("discard")
        closed = None
        if self.learner is not None and self.learner in self.transport.worker_ids("learner"):
            data = {"discard": leftovers, **self._best_news()}
            closed = self.transport.send_task(
                self.learner, "learner_close_task", data, self.close_timeout
            )
        if closed is not None and closed.success:
            self.rollouts.settle({"dropped_run_end": (closed.result or {}).get("dropped_run_end")})
            with contextlib.suppress(ResultError):
                self._best_told(data, {"best_checkpoint": check_best(closed.result or {})})
        self.rollouts.discard_rest()
        self.status.ledger = self.rollouts.ledger()
        self.status.dropped = self.rollouts.dropped
        self.status.restarts = self.supervisor.restarts if self.supervisor else 0
        if self.status.stop_reason is None:
            self.stop_run(stop.MAX_TRAIN_ITER if self.status.done else stop.INTERRUPTED)
        ledger = self.status.ledger
        self.logger.info("ledger: " + ", ".join(f"{k}={v}" for k, v in ledger.items()))
        self.phase = "closed"
        self.save("closed")
