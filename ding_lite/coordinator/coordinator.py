"""The coordinator: runs the task protocol between learners and collectors.

It moves metadata only (file paths, policy versions, sizes). Collectors report the rollout
files they wrote and a periodic scan adopts the ones nobody reported; the coordinator hands
the learner a batch's worth per ``learner_learn_task`` and books the learner's verdict on
every file in the ledger; each new policy version goes to every collector. No run waits for
ever: a progress watchdog ends a run that cannot progress, naming what it waited for, and a
lost or failed worker is handed to the restarter (the launcher), which restarts it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.config.config import to_plain
from ding_lite.coordinator import recovery
from ding_lite.coordinator.checks import ResultError, check_best, check_received
from ding_lite.coordinator.collectors import CollectorPool
from ding_lite.coordinator.learner_side import LearnerLink
from ding_lite.coordinator.ledger import RolloutLedger
from ding_lite.coordinator.marks import one_line
from ding_lite.coordinator.recovery import RECOVERY_FILE, RecoveryError, RecoveryFile
from ding_lite.coordinator.state import CoordinatorState, RunFolders
from ding_lite.coordinator.status import RunStatus, StopRequest
from ding_lite.coordinator.watchdog import Watchdog
from ding_lite.coordinator.workers import Restarter, Transport, where_registered
from ding_lite.utils import stop
from ding_lite.utils.log import get_logger

SCAN_INTERVAL_S = 1.0  # how often path_data is scanned for files nobody reported
ADOPT_AFTER_S = 2.0  # a file is adopted once it is this old and still unreported
CUT_OFF_POLL_S = 0.1  # while no worker is heard, how often the loop looks again


class Coordinator:
    """Drives one run of the parallel pipeline.

    Its :class:`~.state.CoordinatorState` (``state``) is what a restarted coordinator takes
    back; the collector pool and the learner link are handed it, with the transport, the
    ledger and the restarter.

    Args:
        cfg: the resolved config (sent to every worker in its start task).
        transport: the task transport.
        on_status: called with the :class:`RunStatus` after every iteration.
        restarter: restarts lost or failed workers; None drops them.
        recovery: where the state is kept for a restarted coordinator (None: nowhere).
        address: the master's ``host:port`` (saved with the state).
    """

    def __init__(
        self,
        cfg: Any,
        transport: Transport,
        on_status: Callable[[RunStatus], None] | None = None,
        restarter: Restarter | None = None,
        recovery: RecoveryFile | None = None,
        address: str = "",
    ) -> None:
        self.cfg = cfg
        self.transport = transport
        self.on_status = on_status
        self.restarter = restarter
        self.state = CoordinatorState(address=address)
        self.logger = get_logger("coordinator")
        run_dir = Path(cfg.exp_dir or cfg.exp_name)
        self.folders = RunFolders(
            Path(cfg.system.path_data or run_dir / "data"),
            Path(cfg.system.path_policy or run_dir / "policy"),
        )
        self.rollouts = RolloutLedger(
            self.folders.path_data,
            on_reject=self._rejected_path,
            local=cfg.system.data_plane == "files",
        )
        self.watchdog = Watchdog(cfg.system.stall_timeout)
        self.stop_request = StopRequest()
        shared = {
            "state": self.state,
            "transport": transport,
            "ledger": self.rollouts,
            "cfg": cfg,
            "config": to_plain(cfg),
            "logger": self.logger,
            "restarter": restarter,
            "save": self.save,
            "stop_run": self.stop_run,
        }
        self.collectors = CollectorPool(**shared)
        self.learner_link = LearnerLink(
            **shared,
            collectors=self.collectors,
            path_policy=self.folders.path_policy,
            watchdog=self.watchdog,
            stop=self.stop_request,
        )
        self._no_collectors_since: float | None = None
        self._next_scan = 0.0
        #: Seconds each close task may take (shortened to 5 s on Ctrl-C).
        self.close_timeout = cfg.system.task_timeout
        self.recovery = recovery  # what a restarted coordinator takes back (:mod:`.recovery`)
        self.restored = False
        self._paused_seen = 0.0
        self._save_failed = False

    @property
    def status(self) -> RunStatus:
        """The run's figures (the state's)."""
        return self.state.status

    def restore(self, saved: dict[str, Any], restarts: int = 0) -> None:
        """Takes the run back from a previous coordinator's saved state (see
        :mod:`.recovery`), whole or not at all; counts a coordinator restart (at least
        ``restarts``: the supervisor's count, which also knows of coordinators that died
        before they saved).

        Raises:
            RecoveryError: the state is damaged (nothing was changed).
        """
        try:
            back = recovery.read(saved, type(self.state), self.folders)
            self._check_agrees(back.state)
            self.rollouts.restore(back.ledger)  # checked whole first; raises ValueError
        except (TypeError, ValueError) as err:
            raise RecoveryError(f"{RECOVERY_FILE}: {err}") from None
        self.transport.restore_workers(back.workers)
        self.state.take(back.state)
        self.restored = self.collectors.take_back = True
        self.status.coordinator_restarts = max(self.status.coordinator_restarts + 1, restarts)
        self.watchdog.restart_clock()
        waiting = self.rollouts.live()
        self.logger.warning(
            f"took the run back at policy v{self.state.policy.version}, iteration "
            f"{self.status.train_iter} (coordinator restart {self.status.coordinator_restarts}"
            f"); learner {self.state.learner}, {len(self.collectors.running())} collector(s) "
            f"expected back; {waiting['waiting']} rollout(s) waiting, "
            f"{waiting['in_learner']} in the learner"
        )

    def rejoin(self, restarts: int) -> None:
        """Takes the run back with no saved state (none, or one refused): the workers of
        the run may be running still. The learner is asked to take back (it answers where
        its training stands, or resumes from the run's checkpoint), each running collector
        is taken back by its start task, files on disk are adopted; the ledger counts
        from here. ``restarts``: this coordinator's restart number."""
        self.learner_link.rejoining = self.collectors.rejoining = True
        self.collectors.take_back = True
        self.status.coordinator_restarts = max(restarts, 1)
        self.logger.warning(
            f"coordinator restart {self.status.coordinator_restarts} with no state to take "
            "back: the run's workers are taken back as they answer; the ledger counts "
            "from here"
        )

    def _check_agrees(self, state: CoordinatorState) -> None:
        """What the saved state says must agree with the config."""
        status, stop_value = state.status, self.cfg.evaluator.stop_value
        if status.solved and stop_value is not None and status.eval_return < stop_value:
            raise RecoveryError(
                f"status: solved at eval return {status.eval_return:g}, under the stop "
                f"value {stop_value:g}"
            )

    def save(self, kind: str) -> None:
        """Saves the state for a restarted coordinator (a failed write is logged once and
        never ends the run)."""
        if self.recovery is None:
            return
        saved = recovery.snapshot(self.state, self.transport.workers(), self.rollouts.state())
        try:
            self.recovery.save(saved, kind)
        except OSError as err:
            if not self._save_failed:
                self.logger.warning(f"cannot save the coordinator's state ({err}); going on")
            self._save_failed = True

    def finish(self) -> None:
        """Marks the run finished (its result is written) and saves that."""
        self.state.phase = "finished"
        self.save("finished")

    def request_stop(self, reason: str) -> None:
        """Ends the run after the current step (one assignment: safe from other threads)."""
        self.stop_request.request(reason)

    def run(self, wait_workers: float = 120.0) -> RunStatus:
        """Runs until solved, a limit, a stop request or a failure it cannot recover from."""
        self.learner_link.join_timeout = wait_workers
        try:
            if self.state.phase != "running":
                pass  # taken back while closing: close
            elif self.restored and self.state.learner is not None:
                self.collectors.sync(self.state.policy)  # a sync may have been lost on the way
                self._loop()
            elif self.learner_link.connect(resume=self.restored or self.learner_link.rejoining):
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
            if getattr(self.transport, "cut_off_s", 0.0):
                # Nobody is heard: tasks could not arrive, and their failures would count
                # against workers that are only out of reach. Wait for a sign of life.
                time.sleep(CUT_OFF_POLL_S)
                continue
            self.collectors.start_new(self.state.policy)
            self.collectors.poll()
            self._scan()
            if self.status.solved:
                self.stop_run(stop.SOLVED)
                break
            ready = self.rollouts.samples >= self.learner_link.demand()
            if (ready or self.state.inflight is not None) and self.state.learner is not None:
                self.learner_link.learn()
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
            self.status.stop_reason, self.status.stop_detail = reason, one_line(detail)
            if detail:
                self.logger.error(f"stopping ({reason}): {detail}")

    def _should_stop(self) -> bool:
        if self.restarter is not None:
            self.restarter.poll()
        learners = self.transport.worker_ids("learner")  # notices a pause of this process
        self._forgive_pause()
        learner = self.state.learner
        if self.stop_request.reason:
            self.stop_run(self.stop_request.reason)
        elif learner is not None and learner not in learners:
            # Not blamed: the same process may come back (a link restored, a pause over) and
            # is then taken back where it stands.
            self.learner_link.recover("lost: no heartbeat, or its process ended", blame=False)
        elif learner is not None and self.state.is_new_process(
            learner, where_registered(self.transport, "learner").get(learner)
        ):
            self.learner_link.recover("was replaced by a new process with its id", blame=False)
        elif self._no_collectors_for() > self._no_collectors_limit():
            self.stop_run(stop.NO_COLLECTORS, "no collector is left and none is coming back")
        elif self.watchdog.stalled():
            self.stop_run(
                stop.STALLED,
                f"no iteration for {self.watchdog.silent_for():.0f} s (limit "
                f"{self.watchdog.limit:.0f} s); waiting on {self.waiting_on()}",
            )
        return self.status.stop_reason is not None or self.status.done

    def _forgive_pause(self) -> None:
        """After a pause of this process (the master noticed it), the watchdogs start
        afresh: the time it did not run is nobody's fault."""
        paused = getattr(self.transport, "paused_s", 0.0)
        if paused != self._paused_seen:
            self._paused_seen = paused
            self.watchdog.restart_clock()
            self._no_collectors_since = None

    def _no_collectors_limit(self) -> float:
        """Seconds without a collector before the run ends as no_collectors. Per role (no
        launcher to replace them), a lost collector keeps trying to reach this coordinator
        for its master_timeout (a cut link, a pause) and may come back until then."""
        system = self.cfg.system
        limit = 2 * system.heartbeat_tolerance
        return limit if self.restarter is not None else max(limit, system.master_timeout)

    def _no_collectors_for(self) -> float:
        pending = self.restarter.pending("collector") if self.restarter else 0
        if self.collectors.running() or pending or self.collectors.any_unstarted():
            self._no_collectors_since = None
            return 0.0
        if self._no_collectors_since is None:
            self._no_collectors_since = time.monotonic()
        return time.monotonic() - self._no_collectors_since

    def waiting_on(self) -> str:
        """What the run waits for right now (the watchdog names it when the run stalls)."""
        if self.state.learner is None:
            return "a learner to register"
        demand = self.learner_link.demand()
        if self.rollouts.samples < demand:
            who = ", ".join(self.collectors.running()) or "no running collector"
            return f"rollouts from {who} ({self.rollouts.samples}/{demand} samples)"
        return f"learner {self.state.learner}"

    # --- rollouts ----------------------------------------------------------------------
    def _rejected_path(self, path: str, why: str) -> None:
        self.logger.warning(f"refused the rollout {path!r}: {why}")

    def _scan(self) -> None:
        if time.monotonic() >= self._next_scan:
            self._next_scan = time.monotonic() + SCAN_INTERVAL_S
            adopted = self.rollouts.adopt(min_age=ADOPT_AFTER_S)
            if adopted:
                self.logger.info(f"adopted {adopted} rollout file(s) nobody reported")
            self.rollouts.drop_missing()
        self.status.envstep = self.state.envstep_base + self.collectors.envsteps()

    # --- the end -------------------------------------------------------------------------
    def _close(self) -> None:
        state = self.state
        if state.phase == "closed":  # taken back after the close: only the result is left
            return
        if state.phase != "closing":  # (a coordinator taken back while closing goes on)
            state.phase = "closing"
            self.save("close")
        closing = getattr(self.restarter, "closing", None)
        if closing is not None:  # workers that exit from now on are done, not failed
            closing()
        final_eval = not self.status.solved
        self.collectors.close(self.close_timeout, final_eval)
        self.rollouts.adopt()
        self.status.envstep = self.state.envstep_base + self.collectors.envsteps()
        leftovers = self.rollouts.take_all()
        # Saved as handed before the learner deletes them: a coordinator taken back after
        # that books the missing ones as dropped at the run's end, as this one would.
        self.save("discard")
        closed = None
        if state.learner is not None and state.learner in self.transport.worker_ids("learner"):
            data = {"discard": leftovers, **self.learner_link.best_news()}
            closed = self.transport.send_task(
                state.learner, "learner_close_task", data, self.close_timeout
            )
        if closed is not None and closed.success:
            self.rollouts.settle({"dropped_run_end": (closed.result or {}).get("dropped_run_end")})
            if not self.rollouts.local:  # files it held that this ledger had not heard of
                with contextlib.suppress(ResultError):
                    self.rollouts.offer_all(check_received(closed.result or {}))
            with contextlib.suppress(ResultError):
                self.learner_link.best_told(
                    data, {"best_checkpoint": check_best(closed.result or {})}
                )
        self.rollouts.discard_rest()
        left = (closed.result or {}).get("left_in_path_data") if closed is not None else None
        local = self.rollouts.local or not isinstance(left, int) or isinstance(left, bool)
        self.status.ledger = self.rollouts.ledger(
            None if local or not isinstance(left, int) else max(left, 0)
        )
        self.status.dropped = self.rollouts.dropped
        self.status.restarts = self.restarter.restarts if self.restarter else 0
        if self.status.stop_reason is None:
            self.stop_run(stop.MAX_TRAIN_ITER if self.status.done else stop.INTERRUPTED)
        ledger = self.status.ledger
        self.logger.info("ledger: " + ", ".join(f"{k}={v}" for k, v in ledger.items()))
        state.phase = "closed"
        self.save("closed")
