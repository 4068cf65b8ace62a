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
from ding_lite.coordinator.checks import (
    ResultError,
    check_best,
    check_learn_info,
    check_learner_start,
    check_learner_state,
)
from ding_lite.coordinator.collectors import CollectorPool
from ding_lite.coordinator.ledger import RolloutLedger
from ding_lite.coordinator.status import RunStatus
from ding_lite.coordinator.watchdog import Watchdog
from ding_lite.coordinator.workers import Supervisor, Transport
from ding_lite.utils import stop
from ding_lite.utils.log import get_logger

SCAN_INTERVAL_S = 1.0  # how often path_data is scanned for files nobody reported
ADOPT_AFTER_S = 2.0  # a file is adopted once it is this old and still unreported
MAX_LEARNER_FAILURES = 3  # consecutive failed learner tasks before it is restarted


class Coordinator:
    """Drives one run of the parallel pipeline.

    Args:
        cfg: the resolved config (sent to every worker in its start task).
        transport: the task transport.
        on_status: called with the :class:`RunStatus` after every iteration.
        supervisor: restarts lost or failed workers; None drops them.
    """

    def __init__(
        self,
        cfg: Any,
        transport: Transport,
        on_status: Callable[[RunStatus], None] | None = None,
        supervisor: Supervisor | None = None,
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
        self._bad_learners: set[str] = set()
        self._learner_failures = 0
        self._policy: tuple[str, int, float] = ("", 0, 0.0)
        self._envstep_base = 0
        self._stop_requested: str | None = None
        self._no_collectors_since: float | None = None
        self._next_scan = 0.0
        self.batch_size = 1
        #: Seconds each close task may take (shortened to 5 s on Ctrl-C).
        self.close_timeout = cfg.system.task_timeout

    def request_stop(self, reason: str) -> None:
        """Ends the run after the current step (one assignment: safe from other threads)."""
        self._stop_requested = reason

    def run(self, wait_workers: float = 120.0) -> RunStatus:
        """Runs until solved, a limit, a stop request or a failure it cannot recover from."""
        self.join_timeout = wait_workers
        try:
            if self._connect_learner(resume=False):
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
            if self.rollouts.samples >= self._demand() and self.learner is not None:
                self._learn()
                if self.on_status is not None:
                    self.on_status(self.status)
            else:
                time.sleep(0.002)

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
        if self._stop_requested:
            self.stop_run(self._stop_requested)
        elif self.learner is not None and self.learner not in self.transport.worker_ids("learner"):
            self._recover_learner("lost: no heartbeat, or its process ended")
        elif self._no_collectors_for() > 2 * self.cfg.system.heartbeat_tolerance:
            self.stop_run(stop.NO_COLLECTORS, "no collector is left and none is coming back")
        elif self.watchdog.stalled():
            self.stop_run(
                stop.STALLED,
                f"no iteration for {self.watchdog.silent_for():.0f} s (limit "
                f"{self.watchdog.limit:.0f} s); waiting on {self.waiting_on()}",
            )
        return self.status.stop_reason is not None or self.status.done

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

    # --- the learner ---------------------------------------------------------------------
    def _connect_learner(self, resume: bool) -> bool:
        """Starts a registered learner (trying each in turn) within the join timeout."""
        deadline = time.monotonic() + self.join_timeout
        while time.monotonic() < deadline and not self._stop_requested:
            for lid in self.transport.worker_ids("learner"):
                if lid not in self._bad_learners and self._start_learner(lid, resume):
                    return True
                if self.status.stop_reason is not None:
                    return False
            if self.supervisor is not None:
                self.supervisor.poll()  # a replacement may be due
            self.collectors.poll()
            time.sleep(0.05)
        if self._stop_requested:
            self.stop_run(self._stop_requested)
        else:
            self.stop_run(stop.LEARNER_FAILED, f"no learner started within {self.join_timeout:g} s")
        return False

    def _start_learner(self, lid: str, resume: bool) -> bool:
        config = self.config
        ckpt = Path(self.cfg.exp_dir or self.cfg.exp_name) / "ckpt"
        if resume and any(ckpt.glob("ckpt_iter*.pt")):
            hook = {**config["learner"]["hook"], "load_ckpt_before_run": str(ckpt)}
            config = {**config, "learner": {**config["learner"], "hook": hook}}
        outcome = self.transport.send_task(
            lid, "learner_start_task", {"config": config}, self.cfg.system.task_timeout
        )
        try:
            if not outcome.success:
                raise ResultError(outcome.error)
            start = check_learner_start(outcome.result or {}, self.path_policy)
        except ResultError as err:
            self.status.failed_tasks += 1
            self._bad_learners.add(lid)
            self.logger.error(f"learner {lid} failed to start: {err}")
            if str(err).startswith("ConfigError"):
                self.stop_run(stop.LEARNER_FAILED, f"the learner cannot start: {err}")
            elif self.supervisor is not None:  # one of ours: replace it (others just wait)
                self.supervisor.worker_failed(lid, "learner", f"failed to start: {err}")
                self.status.restarts = self.supervisor.restarts
            return False
        self.learner, self._learner_failures, self.status.learner_ranks = lid, 0, start["ranks"]
        self.batch_size = start["batch_size"]
        self._policy = (start["policy_path"], start["policy_version"], start["published_at"])
        self.status.policy_version = self.status.train_iter = start["policy_version"]
        if not resume:
            self._envstep_base = self.status.envstep = start["envstep"]
        else:
            self.logger.info(f"learner {lid} resumed at policy v{start['policy_version']}")
            self.collectors.sync(self._policy, rollback=True)
        loaded = start["checkpoint"] or "~"  # "~" sorts after every checkpoint name
        if skipped := sorted(p.name for p in ckpt.glob("ckpt_iter*.pt") if p.name > loaded):
            self.logger.warning(f"learner resumed from {loaded}; unreadable: {', '.join(skipped)}")
        self.watchdog.restart_clock()
        return True

    def _recover_learner(self, reason: str) -> None:
        """The learner is gone or broken: restart it from its checkpoint, or end the run."""
        lost, self.learner = self.learner, None
        self.rollouts.give_back()
        self.logger.error(f"learner {lost} {reason}")
        if lost is not None:
            self._bad_learners.add(lost)
        if self.supervisor is not None and not self.supervisor.worker_failed(
            lost or "", "learner", reason
        ):
            self.stop_run(stop.LEARNER_FAILED, f"learner {lost} {reason}; no restart left")
            return
        if self._connect_learner(resume=True):
            self.status.restarts = self.supervisor.restarts if self.supervisor else 0

    def _learner_task_failed(self, name: str, error: str) -> None:
        self.status.failed_tasks += 1
        self.logger.error(f"task {name} on {self.learner} failed: {error}")
        if self.learner not in self.transport.worker_ids("learner"):
            return  # lost: the next check restarts it
        self._learner_failures += 1
        if self._learner_failures >= MAX_LEARNER_FAILURES:
            self._recover_learner(f"failed {MAX_LEARNER_FAILURES} tasks in a row ({error})")

    def _learner_state(self, reason: str | None, error: str) -> bool:
        """Acts on a stop reason the learner reported; returns whether it can go on."""
        if reason is None:
            return True
        if reason in (stop.DIVERGED, stop.DISK_FULL):
            self.stop_run(reason, error or reason)
        else:
            self._recover_learner(f"reports its training failed: {error}")
        return False

    def _demand(self) -> int:
        """Samples per iteration: one rollout per running collector (the full batch while
        all configured collectors run), so losing a collector never stalls the run."""
        live = len(self.collectors.running()) or 1
        per_collector = self.batch_size // self.cfg.system.collectors
        return min(self.batch_size, per_collector * live)

    def _agents(self) -> int:
        """Policy rows per env step (samples per env step: the env's agents per copy)."""
        cfg = self.cfg
        env_steps = cfg.policy.collect.n_steps * cfg.env.num_envs * cfg.system.collectors
        return max(1, self.batch_size // env_steps)

    def _learn(self) -> None:
        learner, system = self.learner, self.cfg.system
        demand = self.transport.send_task(learner, "learner_get_data_task", {}, system.http_timeout)
        if not demand.success:
            return self._learner_task_failed("learner_get_data_task", demand.error)
        try:
            if not self._learner_state(*check_learner_state(demand.result or {})):
                return None
            self.batch_size = int(demand.result["batch_size"])
        except (ResultError, KeyError, TypeError, ValueError) as err:
            return self._learner_task_failed("learner_get_data_task", f"bad result: {err}")
        min_version = self.status.policy_version - system.max_policy_lag
        files = self.rollouts.take(self._demand(), min_version)
        data = {"files": files, "envstep": self.status.envstep, **self._best_news()}
        outcome = self.transport.send_task(learner, "learner_learn_task", data, system.task_timeout)
        try:
            if not outcome.success:
                raise ResultError(outcome.error)
            info = check_learn_info(outcome.result or {}, self.path_policy)
        except ResultError as err:
            self.rollouts.give_back()
            return self._learner_task_failed("learner_learn_task", str(err))
        self.rollouts.settle(info["outcome"])
        self.status.dropped = self.rollouts.dropped
        self.status.dropped_env_steps = self.rollouts.dropped_samples // self._agents()
        self._best_told(data, info)
        self._learner_failures = 0
        if not self._learner_state(info["stop_reason"], info["error"]):
            return None
        self._learned(info, time.perf_counter() - outcome.elapsed_s, outcome.elapsed_s)
        return None

    def _learned(self, info: dict[str, Any], sent: float, seconds: float) -> None:
        status = self.status
        status.learn_latency_s.append(seconds)
        if status.first_learn_at is None:
            status.first_learn_at, status.first_learn_envstep = time.perf_counter(), status.envstep
        status.train_iter = info["iteration"]
        if info["skipped_steps"] is not None:
            status.skipped_steps = info["skipped_steps"]
        if info["done"]:
            status.done = True
            self.stop_run(info["done_reason"] or stop.MAX_TRAIN_ITER)
            if info["done_reason"] == stop.DIVERGED:
                self.logger.error("the learner skipped too many non-finite steps: diverged")
        if info["trained"]:
            self.watchdog.progressed()
            status.trained(info)
            self._policy = info["policy"]
            status.policy_version = self._policy[1]
            self.collectors.sync(self._policy)
        elif self.cfg.system.sync_collect:  # nothing trained: no new version to wait for
            self.collectors.sync(self._policy, rollback=True)

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
        self.logger.warning(f"refused a reported rollout {path!r}: {why}")

    def _scan(self) -> None:
        if time.monotonic() >= self._next_scan:
            self._next_scan = time.monotonic() + SCAN_INTERVAL_S
            adopted = self.rollouts.adopt(min_age=ADOPT_AFTER_S)
            if adopted:
                self.logger.info(f"adopted {adopted} rollout file(s) nobody reported")
            self.rollouts.drop_missing()
        self.status.envstep = self._envstep_base + sum(self.collectors.envsteps.values())

    def _best_news(self) -> dict[str, Any]:
        """``{"best": ...}`` while the learner has not been told the best evaluation."""
        best = self.status.best_eval
        if best is None or self.status.best_sent == best["policy_version"]:
            return {}
        return {"best": best}

    def _best_told(self, data: dict[str, Any], info: dict[str, Any]) -> None:
        if "best" in data:
            self.status.best_sent = data["best"]["policy_version"]
        if info["best_checkpoint"] is not None:
            self.status.best_checkpoint = info["best_checkpoint"]

    # --- the end -------------------------------------------------------------------------
    def _close(self) -> None:
        final_eval = not self.status.solved
        self.collectors.close(self.close_timeout, final_eval)
        self.rollouts.adopt()
        self.status.envstep = self._envstep_base + sum(self.collectors.envsteps.values())
        leftovers = self.rollouts.take_all()
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
