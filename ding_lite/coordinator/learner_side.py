"""The coordinator's side of the learner: starting it, feeding it batches, booking its
answers, restarting it when it is lost.

:class:`LearnerLink` is handed the coordinator's state and collaborators explicitly; what
it changes (the learner, the policy, the batch on its way) is the state's, saved with it.
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
    check_received,
)
from ding_lite.coordinator.collectors import CollectorPool
from ding_lite.coordinator.home import home_checkpoints
from ding_lite.coordinator.part import CoordinatorPart
from ding_lite.coordinator.state import Policy
from ding_lite.coordinator.status import StopRequest
from ding_lite.coordinator.watchdog import Watchdog
from ding_lite.coordinator.workers import where_registered
from ding_lite.interaction.protocol import may_have_arrived
from ding_lite.utils import stop
from ding_lite.utils.paths import CKPT_GLOB

LOAD_HOOK = "load_ckpt_before_run"  # the hook a resumed learner must not load beside its own

MAX_LEARNER_FAILURES = 3  # consecutive failed learner tasks before it is restarted


class LearnerLink(CoordinatorPart):
    """The learner's part of the coordinator's protocol (see the module's description).

    Args:
        collectors: the collector pool (new policies go to it; polled while waiting).
        path_policy: the folder the learner publishes policies in.
        watchdog: told when the run progresses.
        stop: the stop an operator requested, if any.
        **parts: a :class:`~.part.CoordinatorPart`'s arguments (the state, the transport,
            the ledger, ...).
    """

    def __init__(
        self,
        *,
        collectors: CollectorPool,
        path_policy: Path,
        watchdog: Watchdog,
        stop: StopRequest,
        **parts: Any,
    ) -> None:
        super().__init__(**parts)
        self.collectors, self.path_policy = collectors, path_policy
        self.watchdog, self.stop = watchdog, stop
        self.join_timeout = self.cfg.system.join_timeout  # the coordinator's run() sets its own
        self._failures = 0  # consecutive failed learner tasks
        #: A coordinator that rejoined the run with no state: the learner's env steps are
        #: the run's so far (no earlier figure to keep).
        self.rejoining = False
        self._born = time.monotonic()
        self._all_ran = False  # every configured collector has run at once

    def connect(self, resume: bool) -> bool:
        """Starts a registered learner (trying each in turn) within the join timeout."""
        deadline = time.monotonic() + self.join_timeout
        while time.monotonic() < deadline and not self.stop.reason:
            where = where_registered(self.transport, "learner")
            for lid in self.transport.worker_ids("learner"):
                failed = f"{lid}@{where.get(lid)}" in self.state.bad_learners
                if not failed and self._start(lid, resume):
                    return True
                if self.state.status.stop_reason is not None:
                    return False
            if self.restarter is not None:
                self.restarter.poll()  # a replacement may be due
            self.collectors.poll()
            time.sleep(0.05)
        if self.stop.reason:
            self.stop_run(self.stop.reason)
        else:
            self.stop_run(stop.LEARNER_FAILED, f"no learner started within {self.join_timeout:g} s")
        return False

    def _start(self, lid: str, resume: bool) -> bool:
        config, state, status = self.config, self.state, self.state.status
        ckpt = Path(self.cfg.exp_dir or self.cfg.exp_name) / "ckpt"
        if resume and any(ckpt.glob(CKPT_GLOB)):
            # The run's own checkpoint replaces whatever the config's first start loaded.
            hook = {k: v for k, v in config["learner"]["hook"].items() if k != LOAD_HOOK}
            learner = {**config["learner"], "hook": hook, "load_path": str(ckpt)}
            config = {**config, "learner": learner}
        # A learner still running this run (back after a cut link or a pause) answers where
        # its training stands instead of starting again.
        data: dict[str, Any] = (
            {"config": config, "take_back": True} if resume else {"config": config}
        )
        if resume and self.cfg.system.data_plane == "http":  # it may be on another host
            data["fetch"] = home_checkpoints(ckpt)
        outcome = self.transport.send_task(
            lid, "learner_start_task", data, self.cfg.system.task_timeout
        )
        try:
            if not outcome.success:
                raise ResultError(outcome.error)
            start = check_learner_start(outcome.result or {}, self.path_policy)
        except ResultError as err:
            status.failed_tasks += 1
            state.bad_learners.add(f"{lid}@{where_registered(self.transport, 'learner').get(lid)}")
            self.logger.error(f"learner {lid} failed to start: {err}")
            if str(err).startswith("ConfigError"):
                self.stop_run(stop.LEARNER_FAILED, f"the learner cannot start: {err}")
            elif self.restarter is not None:  # one of ours: replace it (others just wait)
                self.restarter.worker_failed(lid, "learner", f"failed to start: {err}")
                status.restarts = self.restarter.restarts
            return False
        if not start["running"] and state.inflight is not None:  # a new process: the batch
            self.ledger.give_back()  # goes back (a file it lacks was consumed by the old one)
            state.inflight = None
        state.learner, self._failures, status.learner_ranks = lid, 0, start["ranks"]
        if (address := where_registered(self.transport, "learner").get(lid)) is not None:
            state.addresses[lid] = address
        state.batch_size = start["batch_size"]
        state.policy = Policy(start["policy_path"], start["policy_version"], start["published_at"])
        status.policy_version = status.train_iter = start["policy_version"]
        if not resume or self.rejoining:
            state.envstep_base = status.envstep = start["envstep"]
            self.rejoining = False
        else:
            how = "taken back" if start["running"] else "resumed"  # (after a loss: said)
            self.logger.warning(f"learner {lid} {how} at policy v{start['policy_version']}")
            self.collectors.sync(state.policy, rollback=True)
        loaded = start["checkpoint"] or "~"  # "~" sorts after every checkpoint name
        if skipped := sorted(p.name for p in ckpt.glob(CKPT_GLOB) if p.name > loaded):
            self.logger.warning(f"learner resumed from {loaded}; unreadable: {', '.join(skipped)}")
        self.watchdog.restart_clock()
        self.save("start")
        if (reached := stop.limit_reached(self.cfg, status.envstep, status.train_iter)) is not None:
            self.stop_run(reached)  # resumed at its limit (--resume --max-train-iter N): done
        return True

    def recover(self, reason: str, blame: bool = True) -> None:
        """The learner is gone or broken: take it back, restart it from its checkpoint, or
        end the run.

        ``blame``: that process is not tried again (it failed). Not blamed (lost, or a new
        process holds its id now), the batch on its way stays on its way: a learner that
        comes back as the same process is sent it again under the same batch id, and
        answers as it did if it trained on it (see :meth:`_start`)."""
        state = self.state
        lost, state.learner = state.learner, None
        if blame:
            self.ledger.give_back()
            state.inflight = None
        self.logger.error(f"learner {lost} {reason}")
        address = state.addresses.pop(lost or "", None)
        if lost is not None and blame:  # that process is not tried again (its id may be)
            where = address or where_registered(self.transport, "learner").get(lost)
            state.bad_learners.add(f"{lost}@{where}")
        if self.restarter is not None and not self.restarter.worker_failed(
            lost or "", "learner", reason
        ):
            self.stop_run(stop.LEARNER_FAILED, f"learner {lost} {reason}; no restart left")
            return
        if self.connect(resume=True):
            state.status.restarts = self.restarter.restarts if self.restarter else 0

    def _task_failed(self, name: str, error: str) -> None:
        self.state.status.failed_tasks += 1
        self.logger.error(f"task {name} on {self.state.learner} failed: {error}")
        if self.state.learner not in self.transport.worker_ids("learner"):
            return  # lost: the next check restarts it
        self._failures += 1
        if self._failures >= MAX_LEARNER_FAILURES:
            self.recover(f"failed {MAX_LEARNER_FAILURES} tasks in a row ({error})")

    def _go_on(self, reason: str | None, error: str) -> bool:
        """Acts on a stop reason the learner reported; returns whether it can go on."""
        if reason is None:
            return True
        if reason in (stop.DIVERGED, stop.DISK_FULL):
            self.stop_run(reason, error or reason)
        else:
            self.recover(f"reports its training failed: {error}")
        return False

    def demand(self) -> int:
        """Samples per iteration: one rollout per running collector (the full batch while
        all configured collectors run), so losing a collector never stalls the run.

        With ``system.sync_collect`` every batch is to hold each collector's rollout of the
        same policy version, so until every configured collector has run (at most the join
        timeout after this coordinator started) the demand is the full batch: a collector
        slower to start does not make the first versions from the others' alone.
        """
        configured = self.cfg.system.collectors
        live = len(self.collectors.running()) or 1
        if live >= configured:
            self._all_ran = True
        elif self.cfg.system.sync_collect and not self._all_ran:
            if time.monotonic() - self._born < self.join_timeout:
                live = configured
        batch_size = self.state.batch_size
        return min(batch_size, batch_size // configured * live)

    def _agents(self) -> int:
        """Policy rows per env step (samples per env step: the env's agents per copy)."""
        cfg = self.cfg
        env_steps = cfg.policy.collect.n_steps * cfg.env.num_envs * cfg.system.collectors
        return max(1, self.state.batch_size // env_steps)

    def learn(self) -> None:
        """One iteration: asks the learner's demand, hands it a batch, books its answer."""
        state, status, system = self.state, self.state.status, self.cfg.system
        learner = state.learner
        assert learner is not None  # learn() runs once the learner started
        demand = self.transport.send_task(learner, "learner_get_data_task", {}, system.http_timeout)
        if not demand.success:
            return self._task_failed("learner_get_data_task", demand.error)
        try:
            if not self._go_on(*check_learner_state(demand.result or {})):
                return None
            state.batch_size = int(demand.result["batch_size"])
            if not self.ledger.local:  # the http plane: the learner holds the files
                self.ledger.offer_all(check_received(demand.result))
        except (ResultError, KeyError, TypeError, ValueError) as err:
            return self._task_failed("learner_get_data_task", f"bad result: {err}")
        data = state.inflight or self._next_batch()
        outcome = self.transport.send_task(learner, "learner_learn_task", data, system.task_timeout)
        try:
            if not outcome.success:
                raise ResultError(outcome.error)
            info = check_learn_info(outcome.result or {}, self.path_policy)
        except ResultError as err:
            # The batch stays on its way when the learner may have it (lost, cut off): it
            # goes again under its batch id, and a learner that trained on it answers as it
            # did. One the learner refused goes back to the queue.
            if not may_have_arrived(outcome.error):
                self.ledger.give_back()
                state.inflight = None
                self.save("settle")
            return self._task_failed("learner_learn_task", str(err))
        self.ledger.settle(info["outcome"])
        state.inflight = None
        status.dropped = self.ledger.dropped
        status.dropped_env_steps = self.ledger.dropped_samples // self._agents()
        self.best_told(data, info)
        self._failures = 0
        if not self._go_on(info["stop_reason"], info["error"]):
            return None
        self._learned(info, time.perf_counter() - outcome.elapsed_s, outcome.elapsed_s)
        self.save("settle")
        return None

    def _next_batch(self) -> dict[str, Any]:
        """The next learn task's data: files handed over from the ledger, saved as on their
        way (a restarted coordinator sends it again under the same batch id) before it goes."""
        status = self.state.status
        min_version = status.policy_version - self.cfg.system.max_policy_lag
        files = self.ledger.take(self.demand(), min_version)
        data = {"files": files, "envstep": status.envstep, **self.best_news()}
        self.state.inflight = inflight = {**data, "batch": secrets.token_hex(8)}
        self.save("take")
        return inflight

    def _learned(self, info: dict[str, Any], sent: float, seconds: float) -> None:
        status = self.state.status
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
            self.state.policy = Policy(*info["policy"])
            status.policy_version = self.state.policy.version
            self.collectors.sync(self.state.policy)
        elif self.cfg.system.sync_collect:  # nothing trained: no new version to wait for
            self.collectors.sync(self.state.policy, rollback=True)

    def best_news(self) -> dict[str, Any]:
        """``{"best": ...}`` while the learner has not been told the best evaluation."""
        best = self.state.status.best_eval
        if best is None or self.state.status.best_sent == best["policy_version"]:
            return {}
        return {"best": best}

    def best_told(self, data: dict[str, Any], info: dict[str, Any]) -> None:
        """Books that the learner was told the best evaluation (``data``) and what its
        ``ckpt/best.pt`` holds now (``info``)."""
        if "best" in data:
            self.state.status.best_sent = data["best"]["policy_version"]
        if info["best_checkpoint"] is not None:
            self.state.status.best_checkpoint = info["best_checkpoint"]
