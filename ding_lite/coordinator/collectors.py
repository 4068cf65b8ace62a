"""The coordinator's collectors: starting them, polling their data, syncing policies.

Data and sync tasks go out asynchronously, one outstanding data task per collector, so a
paused or slow collector delays nobody: the coordinator's loop harvests the answers that
came in and moves on.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

from ding_lite.coordinator.checks import ResultError, check_collector_output
from ding_lite.coordinator.part import CoordinatorPart
from ding_lite.coordinator.state import (
    EXCLUDED,
    FAILED,
    LOST,
    RUNNING,
    STARTING,
    CollectorRecord,
    Policy,
)
from ding_lite.coordinator.watchdog import Backoff, QuietLog
from ding_lite.coordinator.workers import where_registered
from ding_lite.utils import stop

COLLECTOR_SEED_STRIDE = 10_007
IDLE_POLL_S = 0.005  # a collector that had nothing new is asked again after this long...
IDLE_POLL_PER_COLLECTOR_S = 0.002  # ...or this long per running collector, if longer


def idle_poll_interval(collectors: int) -> float:
    """Seconds before a collector that had nothing new is asked again.

    With a few collectors a new file is picked up within 5 ms; with many, the coordinator
    sends at most ~500 idle data tasks a second in all (64 collectors: one each 128 ms), so
    polling never crowds out the answers that carry files.
    """
    return max(IDLE_POLL_S, IDLE_POLL_PER_COLLECTOR_S * collectors)


MAX_DATA_FAILURES = 5  # consecutive failed data tasks (not timeouts) before a restart
RESYNC_INTERVAL_S = 1.0  # a collector behind the newest policy is sent it again this often


class CollectorPool(CoordinatorPart):
    """The collectors of a run: starting them, polling their data, syncing policies. What
    it knows of each (state, seed index, env steps, policy version) is a
    :class:`~.state.CollectorRecord` in the coordinator's state, the one that evaluates
    its ``evaluator``. Its arguments are a :class:`~.part.CoordinatorPart`'s.
    """

    def __init__(self, **parts: Any) -> None:
        super().__init__(**parts)
        self._polls: dict[str, Future] = {}
        self._syncs: list[tuple[str, int, Future]] = []
        self._failures: dict[str, int] = {}
        self._idle_until: dict[str, float] = {}
        self._backoff = Backoff()
        self._resync_at: dict[str, float] = {}  # no sync of a missed version before this
        self._quiet = QuietLog(self.logger)
        #: A restarted coordinator's: collectors of the run that are still running are
        #: taken back by their start task (``take_back``), not failed as already started.
        self.take_back = False
        #: A coordinator that rejoined the run with no state: a taken-back collector's
        #: earlier env steps are in the learner's count already (see :meth:`_start`).
        self.rejoining = False

    @property
    def records(self) -> dict[str, CollectorRecord]:
        return self.state.collectors

    def _in(self, state: str) -> list[str]:
        return [c for c, r in self.records.items() if r.state == state]

    def running(self) -> list[str]:
        """Started collectors that are registered and alive."""
        alive = set(self.transport.worker_ids("collector"))
        return [c for c in self._in(RUNNING) if c in alive]

    def any_unstarted(self) -> bool:
        started = set(self.records) - set(self._in(STARTING))
        return any(c not in started for c in self.transport.worker_ids("collector"))

    def envsteps(self) -> int:
        """Env steps of every collector the run had, as each reported last."""
        return sum(r.envsteps for r in self.records.values())

    # --- workers that fail ---------------------------------------------------------------
    def worker_failed(self, worker_id: str, reason: str) -> None:
        """A collector is lost or failed: the restarter replaces it (under a fresh id)."""
        if self.restarter is not None:
            self.restarter.worker_failed(worker_id, "collector", reason)
            self.state.status.restarts = self.restarter.restarts

    def retire(self, worker_id: str) -> None:
        """Drops a collector for good and closes it, so its process exits instead of idling."""
        if self.restarter is not None:
            self.restarter.retire(worker_id)
        self.transport.send_task_async(
            worker_id, "collector_close_task", {"final_eval": False}, self.cfg.system.task_timeout
        )

    # --- start ---------------------------------------------------------------------------
    def start_new(self, policy: Policy) -> None:
        where = where_registered(self.transport, "collector")
        for cid in self.transport.worker_ids("collector"):
            record = self.records.get(cid)
            started = record is not None and record.state != STARTING
            if started and self.state.is_new_process(cid, where.get(cid)):
                self.logger.warning(f"collector {cid} is a new process at {where[cid]}")
                # Started below, like any new collector (its record moves to the end).
                self.records[cid] = record = self.records.pop(cid)
                record.state = STARTING
                self._polls.pop(cid, None)
                self.state.addresses.pop(cid)
            if record is not None and record.state == LOST:
                record.state = RUNNING  # it came back within reach (no restarter)
                self.logger.warning(f"collector {cid} is back")
            if record is not None and record.state != STARTING:
                continue
            self._start(cid, policy)

    def _start(self, cid: str, policy: Policy) -> None:
        cfg = self.cfg
        index = len(self.records)  # (a new process under a known id: its record is counted)
        record = self.records.setdefault(cid, CollectorRecord())
        record.index = index
        # Taking back, the collector that evaluated says so in its answer; if none does,
        # the next sync hands evaluation over.
        evaluate = self.state.evaluator not in self.running() and not self.take_back
        data = {
            "config": self.config,
            # The first collector has the run's seed: it steps and samples as a serial run
            # with that seed does.
            "seed": cfg.seed + COLLECTOR_SEED_STRIDE * record.index,
            "evaluate": evaluate,
            "policy_path": policy.path,
            "policy_version": policy.version,
            **self._source(),
        }
        if self.take_back:
            data["take_back"] = True
        outcome = self.transport.send_task(
            cid, "collector_start_task", data, cfg.system.task_timeout
        )
        if not outcome.success:
            self.state.status.failed_tasks += 1
            if outcome.error.startswith("ConfigError"):
                record.state = EXCLUDED  # a restart would fail the same way
                self.logger.error(f"collector {cid} dropped, it cannot start: {outcome.error}")
                self.retire(cid)
            else:
                record.state = FAILED
                self.logger.error(f"collector {cid} failed to start: {outcome.error}")
                self.worker_failed(cid, outcome.error)
            return
        record.state, record.version = RUNNING, policy.version
        if (address := where_registered(self.transport, "collector").get(cid)) is not None:
            self.state.addresses[cid] = address
        out = outcome.result if isinstance(outcome.result, dict) else {}
        taken_back = out.get("taken_back") is True
        if evaluate or (taken_back and out.get("evaluates") is True and not self._evaluating()):
            self.state.evaluator = cid
        if taken_back:
            self._taken_back(cid, record, out.get("envstep"))
        self.save("start")
        where = f", {out.get('num_envs')} env copies on {out.get('device')}" if out else ""
        how = "taken back, running" if taken_back else "started"
        self.logger.info(f"collector {cid} {how} (seed {data['seed']}{where})")

    def _evaluating(self) -> bool:
        return self.state.evaluator in self.running()

    def _taken_back(self, cid: str, record: CollectorRecord, envstep: Any) -> None:
        """Books the env steps a collector taken back had collected (its own count): a
        rejoining coordinator took the learner's count as its base, which holds them."""
        if not isinstance(envstep, int) or isinstance(envstep, bool) or envstep < 0:
            return
        record.envsteps = envstep
        if self.rejoining:
            self.state.envstep_base = max(0, self.state.envstep_base - envstep)

    # --- data ----------------------------------------------------------------------------
    def poll(self) -> None:
        """Harvests answered data tasks, sends new ones, and notices lost collectors."""
        alive = set(self.transport.worker_ids("collector"))
        for cid, record in list(self.records.items()):
            if record.state == RUNNING and cid not in alive:
                record.state = LOST
                self._polls.pop(cid, None)
                self.logger.warning(f"collector {cid} lost (no heartbeat, or its process ended)")
                self.worker_failed(cid, "lost")
        for cid, future in list(self._polls.items()):
            if future.done():
                del self._polls[cid]
                self._harvest(cid, future.result())
        now = time.monotonic()
        for cid in self.running():
            if cid in self._polls or now < self._idle_until.get(cid, 0.0):
                continue
            if self._backoff.ready(cid):
                self._polls[cid] = self.transport.send_task_async(
                    cid, "collector_data_task", {}, self.cfg.system.http_timeout
                )
        self._syncs = [s for s in self._syncs if not self._sync_done(*s)]
        self._catch_up()
        self.state.status.collectors_alive = len(self.running())

    def _harvest(self, cid: str, outcome: Any) -> None:
        if outcome.success:
            try:
                self.take_output(cid, outcome.result or {})
            except ResultError as err:
                self._failed(cid, f"bad result: {err}")
                return
            self._backoff.succeeded(cid)
            self._failures[cid] = 0
            self.state.status.control_latency_s.append(outcome.elapsed_s)
            if not (outcome.result or {}).get("files"):
                wait = idle_poll_interval(len(self.records) - len(self._in(STARTING)))
                self._idle_until[cid] = time.monotonic() + wait
        else:
            self._failed(cid, outcome.error)

    def _failed(self, cid: str, error: str) -> None:
        self.state.status.failed_tasks += 1
        delay = self._backoff.failed(cid)
        self._quiet("error", cid, f"data task on {cid} failed ({error}); next try in {delay:.2f} s")
        if error.startswith("timed out"):
            return  # a slow or paused collector: its heartbeats decide whether it is lost
        if "DiskFullError" in error or "No space left on device" in error:
            self.stop_run(stop.DISK_FULL, f"collector {cid} cannot write: {error}")
            return
        self._failures[cid] = self._failures.get(cid, 0) + 1
        record = self.records.get(cid)
        if self._failures[cid] >= MAX_DATA_FAILURES and record and record.state == RUNNING:
            record.state = FAILED
            self.logger.error(f"collector {cid} failed {MAX_DATA_FAILURES} data tasks in a row")
            self.worker_failed(cid, error)

    def take_output(self, cid: str, out: dict[str, Any]) -> None:
        """Books a collector's data or close result (validated first; raises ResultError)."""
        status, ev = self.state.status, self.cfg.evaluator
        checked = check_collector_output(
            out,
            policy_version=status.policy_version,
            n_episodes=ev.n_episodes,
            stop_value=ev.stop_value,
            may_evaluate=cid == self.state.evaluator,
        )
        self.ledger.offer_all(checked["paths"])
        if checked["envstep"] is not None:
            self.records.setdefault(cid, CollectorRecord()).envsteps = checked["envstep"]
        status.episode_returns.extend(checked["episode_returns"])
        status.episode_outcomes.extend(checked["episode_outcomes"])
        status.sync_latency_s.extend(checked["sync_latency_s"])
        for report in checked["evals"]:
            self.record_eval(report)
        if checked["evals"]:
            self.save("eval")
        for why in checked["refused_evals"]:
            self.logger.warning(f"refused an evaluation from {cid}: {why}")

    def record_eval(self, report: dict[str, Any]) -> None:
        """Books an evaluation (already checked and re-judged by ``checks``)."""
        status, win = self.state.status, report["win_rate"]
        win_text = "" if win is None else f", win rate {win:.1%}"
        self.logger.info(
            f"eval of policy v{report['policy_version']}: return "
            f"{report['return_mean']:.2f} over {report['n_episodes']} episodes{win_text}"
        )
        if report["policy_version"] == 0 and self.cfg.evaluator.get("before_train"):
            status.eval_before_train = {k: report[k] for k in ("return_mean", "win_rate")}
            report = {**report, "solved": False}  # an evaluation before training never solves
        best = status.best_eval
        if best is None or report["return_mean"] > best["return_mean"]:
            # The learner writes ckpt/best.pt from this version's policy file.
            status.best_eval = {k: report[k] for k in ("policy_version", "return_mean")}
        if status.solved:
            return  # the evaluation that solved the run stays the run's figure
        status.eval_return, status.eval_win_rate = report["return_mean"], win
        status.eval_policy_version = report["policy_version"]
        status.eval_seconds = report.get("seconds")
        status.eval_episodes = report["n_episodes"]
        status.solved = report["solved"]

    # --- policy sync ---------------------------------------------------------------------
    def sync(self, policy: Policy, rollback: bool = False) -> None:
        """Sends the policy to every running collector (asynchronously)."""
        data: dict[str, Any] = {**policy._asdict(), **self._source()}
        if rollback:
            data["rollback"] = True
        running = self.running()
        if running and self.state.evaluator not in running:
            self.state.evaluator = running[0]  # the evaluating collector was lost: hand it over
            self.logger.warning(f"collector {self.state.evaluator} takes over evaluation")
        for cid in running:
            self._send_sync(cid, data)

    def _source(self) -> dict[str, str]:
        """``{"source": learner host:port}`` on the http data plane, where collectors send
        rollouts and fetch policies; ``{}`` on the files plane."""
        if self.cfg.system.data_plane != "http":
            return {}
        return {"source": self.state.addresses.get(self.state.learner or "", "")}

    def _send_sync(self, cid: str, data: dict[str, Any]) -> None:
        task = {**data, "evaluate": True} if cid == self.state.evaluator else data
        future = self.transport.send_task_async(
            cid, "collector_policy_sync_task", task, self.cfg.system.http_timeout
        )
        self._syncs.append((cid, data["version"], future))
        self._resync_at[cid] = time.monotonic() + RESYNC_INTERVAL_S

    def _catch_up(self) -> None:
        """Sends the newest policy again to a running collector whose sync of it failed (a
        cut link, a collector lost and back) and that has none on its way: no new version
        may come while it is the only collector, so it must not wait for the next one."""
        policy = self.state.policy
        if not policy.path:
            return
        syncing = {cid for cid, _, _ in self._syncs}
        now = time.monotonic()
        for cid in self.running():
            held = self.records[cid].version  # a running collector's: never None
            behind = held is not None and held < policy.version and cid not in syncing
            if behind and now >= self._resync_at.get(cid, 0.0):
                self._send_sync(cid, {**policy._asdict(), **self._source()})

    def _sync_done(self, cid: str, version: int, future: Future) -> bool:
        if not future.done():
            return False
        outcome = future.result()
        if not outcome.success:
            self.state.status.failed_tasks += 1
            self._quiet("error", f"sync-{cid}", f"policy sync on {cid} failed: {outcome.error}")
        else:
            self.records[cid].version = version
        return True

    # --- close ---------------------------------------------------------------------------
    def close(self, timeout: float, final_eval: bool) -> None:
        """Closes every running collector and books what they had not handed over."""
        deadline = time.monotonic() + timeout
        futures = {}
        # Every collector registered now is closed, whatever its record says (but one
        # retired, closed already): a start that never got its answer (Ctrl-C while it
        # was on its way) may have started it all the same, and one lost or failed may
        # have come back (a link restored) and collect on; closed, it stops writing and
        # what it wrote is booked.
        retired = set(self._in(EXCLUDED))
        for cid in [c for c in self.transport.worker_ids("collector") if c not in retired]:
            data = {"final_eval": final_eval and cid == self.state.evaluator}
            futures[cid] = self.transport.send_task_async(
                cid, "collector_close_task", data, timeout
            )
        pending = {**self._polls, **futures}
        self._polls = {}
        for cid, future in pending.items():
            _wait(future, deadline)
            if future.done() and future.result().success:
                try:
                    self.take_output(cid, future.result().result or {})
                except ResultError as err:
                    self.logger.error(f"close of {cid}: bad result: {err}")
        for _, _, future in self._syncs:
            _wait(future, deadline)


def _wait(future: Future, deadline: float) -> None:
    try:
        future.exception(timeout=max(deadline - time.monotonic(), 0.0))
    except Exception:  # a timeout: the master fails the task itself when it stops
        pass
