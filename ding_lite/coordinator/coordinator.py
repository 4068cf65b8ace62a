"""The coordinator: runs the task protocol between learners and collectors.

It moves metadata only (file paths, policy versions, sizes): collectors report the rollout
files they wrote, the coordinator buffers their metadata and hands the learner a batch's worth
per ``learner_learn_task``; each new policy version goes to every collector as a
``collector_policy_sync_task``. A task that fails is logged and the run carries on; a worker
that stops answering is dropped by the transport and its buffered files are still used.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ding_lite.config.config import to_plain
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.log import get_logger

COLLECTOR_SEED_STRIDE = 10_007
MAX_DATA_FAILURES = 3  # consecutive failed data tasks before a collector is dropped


class TaskOutcome(Protocol):
    success: bool
    result: dict[str, Any] | None
    error: str | None


class Transport(Protocol):
    """What the coordinator needs from the transport (``interaction.Master`` provides it)."""

    def worker_ids(self, role: str) -> list[str]: ...

    def send_task(self, worker_id: str, name: str, data: dict, timeout: float) -> TaskOutcome: ...


@dataclass
class RunStatus:
    """What the coordinator knows about the run; the launcher prints it."""

    envstep: int = 0
    train_iter: int = 0
    policy_version: int = 0
    policy_lag: float = 0.0
    dropped: int = 0
    eval_return: float | None = None
    eval_win_rate: float | None = None  # envs that report episode outcomes only
    solved: bool = False
    done: bool = False
    stop_reason: str | None = None
    collectors_alive: int = 0
    learners_alive: int = 0
    failed_tasks: int = 0
    episode_returns: list[float] = field(default_factory=list)
    episode_outcomes: list[float] = field(default_factory=list)
    sync_latency_s: list[float] = field(default_factory=list)
    learn_latency_s: list[float] = field(default_factory=list)
    control_latency_s: list[float] = field(default_factory=list)
    # (seconds since the first update, envstep): the steady-state rate leaves out start-up.
    first_learn_at: float | None = None
    first_learn_envstep: int = 0


class Coordinator:
    """Drives one run of the parallel pipeline.

    Args:
        cfg: the resolved config (sent to every worker in its start task).
        transport: the task transport.
        on_status: called with the :class:`RunStatus` after every iteration.
    """

    def __init__(
        self, cfg: Any, transport: Transport, on_status: Callable[[RunStatus], None] | None = None
    ) -> None:
        self.cfg = cfg
        self.transport = transport
        self.on_status = on_status
        self.status = RunStatus()
        self._logger = get_logger("coordinator")
        self._config = to_plain(cfg)
        self._buffer: list[dict[str, Any]] = []
        self._started: dict[str, int] = {}  # collector id -> seed index
        self._envsteps: dict[str, int] = {}
        self._envstep_base = 0  # env steps of the run this one resumes (0 for a fresh run)
        self._stop_requested: str | None = None
        self._evaluator: str | None = None  # the collector that evaluates
        self._excluded: set[str] = set()  # collectors that failed to start or keep failing
        self._data_failures: dict[str, int] = {}
        #: Seconds each close task may take (shortened to 5 s on Ctrl-C).
        self.close_timeout = cfg.system.task_timeout

    def request_stop(self, reason: str) -> None:
        """Ends the run after the current step (thread-safe enough: one assignment)."""
        self._stop_requested = reason

    def run(self, wait_workers: float = 120.0) -> RunStatus:
        """Runs until solved, a limit, a stop request or the loss of every learner."""
        timeout = self.cfg.system.task_timeout
        learner = self._wait_for("learner", wait_workers)[0]
        self._wait_for("collector", wait_workers)
        start = self._task(learner, "learner_start_task", {"config": self._config}, timeout)
        if start is None:
            raise DingLiteError("the learner failed to start; see its log")
        self.batch_size = int(start["batch_size"])
        self._policy = (start["policy_path"], int(start["policy_version"]), start["published_at"])
        self.status.policy_version = int(start["policy_version"])
        self._envstep_base = self.status.envstep = int(start.get("envstep", 0))
        self.status.train_iter = int(start["policy_version"])
        try:
            self._loop(learner)
        except KeyboardInterrupt:
            self.status.stop_reason = "interrupted"
            self.close_timeout = min(self.close_timeout, 5.0)
            raise
        finally:
            self._close(learner)
        return self.status

    def _loop(self, learner: str) -> None:
        while not self._finished(learner):
            self._start_new_collectors()
            self._poll_collectors()
            if self.status.solved:
                self.status.stop_reason = "solved"
                break
            if sum(m["size"] for m in self._buffer) >= self._demand():
                self._learn(learner)
                if self.on_status is not None:
                    self.on_status(self.status)
            else:
                time.sleep(0.002)

    # --- steps ---------------------------------------------------------------------------
    def _finished(self, learner: str) -> bool:
        if self._stop_requested:
            self.status.stop_reason = self._stop_requested
            return True
        if self.status.done:
            return True
        if learner not in self.transport.worker_ids("learner"):
            self.status.stop_reason = "learner lost"
            self._logger.error("the learner stopped answering; ending the run")
            return True
        return False

    def _demand(self) -> int:
        """Samples to hand the learner: one rollout per live collector (the learner's full
        batch while all configured collectors live), so losing a collector never stalls the
        run."""
        live = len(self._polled_collectors()) or 1
        per_collector = self.batch_size // self.cfg.system.collectors
        return min(self.batch_size, per_collector * live)

    def _polled_collectors(self) -> list[str]:
        """Started collectors that are alive and started successfully."""
        return [
            c
            for c in self.transport.worker_ids("collector")
            if c in self._started and c not in self._excluded
        ]

    def _wait_for(self, role: str, timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ids = self.transport.worker_ids(role)
            if ids:
                return ids
            time.sleep(0.05)
        raise DingLiteError(f"no {role} registered within {timeout:g} s")

    def _start_new_collectors(self) -> None:
        path, version, published_at = self._policy
        for cid in self.transport.worker_ids("collector"):
            if cid in self._started:
                continue
            index = len(self._started)
            data = {
                "config": self._config,
                "seed": self.cfg.seed + COLLECTOR_SEED_STRIDE * (index + 1),
                "evaluate": self._evaluator not in self.transport.worker_ids("collector"),
                "policy_path": path,
                "policy_version": version,
            }
            self._started[cid] = index
            out = self._task(cid, "collector_start_task", data, self.cfg.system.task_timeout)
            if out is None:
                self._excluded.add(cid)  # not polled; its log says why
            else:
                if data["evaluate"]:
                    self._evaluator = cid
                where = ""
                if "device" in out:
                    where = f", {out['num_envs']} env copies on {out['device']}"
                self._logger.info(f"collector {cid} started (seed {data['seed']}{where})")

    def _poll_collectors(self) -> None:
        alive = self._polled_collectors()
        self.status.collectors_alive = len(alive)
        for cid in alive:
            sent = time.perf_counter()
            out = self._task(cid, "collector_data_task", {}, self.cfg.system.http_timeout)
            if out is None:
                # A collector that keeps failing (e.g. its env loop crashed while its process
                # still heartbeats) must not hold back the demand of the others.
                self._data_failures[cid] = self._data_failures.get(cid, 0) + 1
                if self._data_failures[cid] >= MAX_DATA_FAILURES:
                    self._excluded.add(cid)
                    self._logger.error(f"collector {cid} failed {MAX_DATA_FAILURES} times; dropped")
            else:
                self._data_failures[cid] = 0
                self.status.control_latency_s.append(time.perf_counter() - sent)
                self._take_collector_output(cid, out)
        self.status.envstep = self._envstep_base + sum(self._envsteps.values())

    def _take_collector_output(self, cid: str, out: dict[str, Any]) -> None:
        self._buffer.extend(out["files"])
        self._envsteps[cid] = int(out.get("envstep", self._envsteps.get(cid, 0)))
        self.status.episode_returns.extend(out.get("episode_returns", []))
        self.status.episode_outcomes.extend(out.get("episode_outcomes", []))
        self.status.sync_latency_s.extend(out.get("sync_latency_s", []))
        for report in out.get("evals", []):
            win_rate = report.get("win_rate")
            win_text = "" if win_rate is None else f", win rate {win_rate:.1%}"
            self._logger.info(
                f"eval of policy v{report['policy_version']}: return "
                f"{report['return_mean']:.2f} over {report['n_episodes']} episodes{win_text}"
            )
            if self.status.solved:
                continue  # the evaluation that solved the run stays the run's figure
            self.status.eval_return = report["return_mean"]
            self.status.eval_win_rate = win_rate
            self.status.solved = bool(report["solved"])

    def _learn(self, learner: str) -> None:
        demand = self._task(learner, "learner_get_data_task", {}, self.cfg.system.http_timeout)
        if demand is None:
            return
        self.batch_size = int(demand["batch_size"])
        # Freshest rollouts first; what is older than the lag limit rides along so the
        # learner deletes it (and counts it as dropped).
        self._buffer.sort(key=lambda m: m["policy_version"], reverse=True)
        files, samples = [], 0
        while self._buffer and samples < self._demand():
            meta = self._buffer.pop(0)
            files.append(meta)
            samples += meta["size"]
        limit = self.status.policy_version - self.cfg.system.max_policy_lag
        stale = [m for m in self._buffer if m["policy_version"] < limit]
        self._buffer = [m for m in self._buffer if m["policy_version"] >= limit]
        sent = time.perf_counter()
        info = self._task(
            learner,
            "learner_learn_task",
            {"files": files + stale, "envstep": self.status.envstep},
            self.cfg.system.task_timeout,
        )
        if info is None:
            return
        self.status.learn_latency_s.append(time.perf_counter() - sent)
        if self.status.first_learn_at is None:
            self.status.first_learn_at = time.perf_counter()
            self.status.first_learn_envstep = self.status.envstep
        self.status.train_iter = int(info["iteration"])
        self.status.dropped += int(info["dropped"])
        self.status.done = bool(info["done"])
        if self.status.done and not self.status.stop_reason:
            self.status.stop_reason = info.get("done_reason") or "limit reached"
        if info.get("trained"):
            self.status.policy_lag = float(info.get("policy_lag", 0.0))
            version = int(info["policy_version"])
            self.status.policy_version = version
            self._policy = (info["policy_path"], version, info["published_at"])
            self._sync_policy()

    def _sync_policy(self) -> None:
        path, version, published_at = self._policy
        data = {"path": path, "version": version, "published_at": published_at}
        alive = self._polled_collectors()
        if alive and self._evaluator not in alive:
            # The evaluating collector was lost: hand evaluation to another one.
            self._evaluator = alive[0]
            self._logger.warning(f"collector {self._evaluator} takes over evaluation")
            self._task(
                self._evaluator,
                "collector_policy_sync_task",
                {**data, "evaluate": True},
                self.cfg.system.http_timeout,
            )
            alive = alive[1:]
        for cid in alive:
            self._task(cid, "collector_policy_sync_task", data, self.cfg.system.http_timeout)

    def _close(self, learner: str) -> None:
        timeout = self.close_timeout
        for cid in self.transport.worker_ids("collector"):
            if cid in self._started:
                final_eval = cid == self._evaluator and not self.status.solved
                out = self._task(cid, "collector_close_task", {"final_eval": final_eval}, timeout)
                if out is not None:
                    self._take_collector_output(cid, out)
        leftovers, self._buffer = self._buffer, []
        self.status.envstep = self._envstep_base + sum(self._envsteps.values())
        if learner in self.transport.worker_ids("learner"):
            self._task(learner, "learner_close_task", {"discard": leftovers}, timeout)

    def _task(self, worker: str, name: str, data: dict, timeout: float) -> dict | None:
        outcome = self.transport.send_task(worker, name, data, timeout)
        if outcome.success:
            return outcome.result or {}
        self.status.failed_tasks += 1
        self._logger.error(f"task {name} on {worker} failed: {outcome.error}")
        return None
