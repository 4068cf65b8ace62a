"""The coordinator's side of the learner: starting it, feeding it batches, booking its
answers, restarting it when it is lost.

A mixin of :class:`~ding_lite.coordinator.Coordinator`, which owns the state it uses.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from ding_lite.coordinator.checks import (
    ResultError,
    check_learn_info,
    check_learner_start,
    check_learner_state,
)
from ding_lite.utils import stop

MAX_LEARNER_FAILURES = 3  # consecutive failed learner tasks before it is restarted


class LearnerSide:
    """The learner's part of the coordinator's protocol (see the module's description)."""

    def _connect_learner(self, resume: bool) -> bool:
        """Starts a registered learner (trying each in turn) within the join timeout."""
        deadline = time.monotonic() + self.join_timeout
        while time.monotonic() < deadline and not self._stop_requested:
            where = self.where("learner")
            for lid in self.transport.worker_ids("learner"):
                failed = f"{lid}@{where.get(lid)}" in self._bad_learners
                if not failed and self._start_learner(lid, resume):
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
            self._bad_learners.add(f"{lid}@{self.where('learner').get(lid)}")
            self.logger.error(f"learner {lid} failed to start: {err}")
            if str(err).startswith("ConfigError"):
                self.stop_run(stop.LEARNER_FAILED, f"the learner cannot start: {err}")
            elif self.supervisor is not None:  # one of ours: replace it (others just wait)
                self.supervisor.worker_failed(lid, "learner", f"failed to start: {err}")
                self.status.restarts = self.supervisor.restarts
            return False
        self.learner, self._learner_failures, self.status.learner_ranks = lid, 0, start["ranks"]
        if (address := self.where("learner").get(lid)) is not None:
            self.addresses[lid] = address
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
        self.save("start")
        return True

    def _recover_learner(self, reason: str, blame: bool = True) -> None:
        """The learner is gone or broken: restart it from its checkpoint, or end the run.

        ``blame``: its id is not tried again (False: a new process holds the id now)."""
        lost, self.learner = self.learner, None
        self.rollouts.give_back()
        self.inflight = None
        self.logger.error(f"learner {lost} {reason}")
        address = self.addresses.pop(lost or "", None)
        if lost is not None and blame:  # that process is not tried again (its id may be)
            self._bad_learners.add(f"{lost}@{address or self.where('learner').get(lost)}")
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
        data = self.inflight or self._next_batch()
        outcome = self.transport.send_task(learner, "learner_learn_task", data, system.task_timeout)
        try:
            if not outcome.success:
                raise ResultError(outcome.error)
            info = check_learn_info(outcome.result or {}, self.path_policy)
        except ResultError as err:
            self.rollouts.give_back()
            self.inflight = None
            self.save("settle")
            return self._learner_task_failed("learner_learn_task", str(err))
        self.rollouts.settle(info["outcome"])
        self.inflight = None
        self.status.dropped = self.rollouts.dropped
        self.status.dropped_env_steps = self.rollouts.dropped_samples // self._agents()
        self._best_told(data, info)
        self._learner_failures = 0
        if not self._learner_state(info["stop_reason"], info["error"]):
            return None
        self._learned(info, time.perf_counter() - outcome.elapsed_s, outcome.elapsed_s)
        self.save("settle")
        return None

    def _next_batch(self) -> dict[str, Any]:
        """The next learn task's data: files handed over from the ledger, saved as on their
        way (a restarted coordinator sends it again under the same batch id) before it goes."""
        min_version = self.status.policy_version - self.cfg.system.max_policy_lag
        files = self.rollouts.take(self._demand(), min_version)
        data = {"files": files, "envstep": self.status.envstep, **self._best_news()}
        self.inflight = {**data, "batch": secrets.token_hex(8)}
        self.save("take")
        return self.inflight

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
