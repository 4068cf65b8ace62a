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
from ding_lite.coordinator.watchdog import Backoff, QuietLog
from ding_lite.utils import stop
from ding_lite.utils.paths import is_worker_id

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

RUNNING, EXCLUDED, LOST, FAILED = "running", "excluded", "lost", "failed"


class CollectorPool:
    """Collectors by id with their state (running, excluded for a config error, lost, failed).

    Args:
        coordinator: the :class:`~ding_lite.coordinator.Coordinator` (transport, config,
            status, rollout ledger and supervisor are its).
    """

    def __init__(self, coordinator: Any) -> None:
        self.c = coordinator
        self.state: dict[str, str] = {}
        self.index: dict[str, int] = {}
        self.envsteps: dict[str, int] = {}
        self.versions: dict[str, int] = {}  # the policy version each collector said it holds
        self.evaluator: str | None = None
        self._polls: dict[str, Future] = {}
        self._syncs: list[tuple[str, int, Future]] = []
        self._failures: dict[str, int] = {}
        self._idle_until: dict[str, float] = {}
        self._backoff = Backoff()
        self._quiet = QuietLog(coordinator.logger)

    def running(self) -> list[str]:
        """Started collectors that are registered and alive."""
        alive = set(self.c.transport.worker_ids("collector"))
        return [c for c, s in self.state.items() if s == RUNNING and c in alive]

    def any_unstarted(self) -> bool:
        return any(c not in self.state for c in self.c.transport.worker_ids("collector"))

    # --- recovery ------------------------------------------------------------------------
    def restore(self, saved: dict[str, Any]) -> None:
        """Takes back the collectors a previous coordinator of the run had started (their
        state, seed index, env steps, policy version and the evaluating one).

        Raises:
            ValueError: an id is not a worker id, or a value is of the wrong kind.
        """
        tables = {k: saved.get(k) for k in ("state", "index", "envsteps", "versions")}
        if not all(isinstance(t, dict) and all(map(is_worker_id, t)) for t in tables.values()):
            raise ValueError("collector tables must map worker ids to values")
        if not set(tables["state"].values()) <= {RUNNING, EXCLUDED, LOST, FAILED}:
            raise ValueError("a collector state must be running, excluded, lost or failed")
        numbers = [*tables["index"].values(), *tables["envsteps"].values()]
        numbers += tables["versions"].values()
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            raise ValueError("collector indices, env steps and versions must be counts")
        evaluator = saved.get("evaluator")
        if evaluator is not None and not is_worker_id(evaluator):
            raise ValueError("the evaluating collector must be a worker id")
        self.state, self.index = dict(tables["state"]), dict(tables["index"])
        self.envsteps, self.versions = dict(tables["envsteps"]), dict(tables["versions"])
        self.evaluator = evaluator

    # --- start ---------------------------------------------------------------------------
    def start_new(self, policy: tuple[str, int, float]) -> None:
        where = self.c.where("collector")
        for cid in self.c.transport.worker_ids("collector"):
            if cid in self.state and self.c.is_new_process(cid, where.get(cid)):
                self.c.logger.warning(f"collector {cid} is a new process at {where[cid]}")
                del self.state[cid]  # started below, like any new collector
                self._polls.pop(cid, None)
                self.c.addresses.pop(cid)
            if self.state.get(cid) == LOST:
                self.state[cid] = RUNNING  # it came back within reach (no supervisor)
                self.c.logger.info(f"collector {cid} is back")
            if cid in self.state:
                continue
            self._start(cid, policy)

    def _start(self, cid: str, policy: tuple[str, int, float]) -> None:
        cfg = self.c.cfg
        self.index[cid] = len(self.index)
        evaluate = self.evaluator not in self.running()
        data = {
            "config": self.c.config,
            # The first collector has the run's seed: it steps and samples as a serial run
            # with that seed does.
            "seed": cfg.seed + COLLECTOR_SEED_STRIDE * self.index[cid],
            "evaluate": evaluate,
            "policy_path": policy[0],
            "policy_version": policy[1],
        }
        outcome = self.c.transport.send_task(
            cid, "collector_start_task", data, cfg.system.task_timeout
        )
        if not outcome.success:
            self.c.status.failed_tasks += 1
            if outcome.error.startswith("ConfigError"):
                self.state[cid] = EXCLUDED  # a restart would fail the same way
                self.c.logger.error(f"collector {cid} dropped, it cannot start: {outcome.error}")
                self.c.retire(cid, "collector")
            else:
                self.state[cid] = FAILED
                self.c.logger.error(f"collector {cid} failed to start: {outcome.error}")
                self.c.worker_failed(cid, "collector", outcome.error)
            return
        self.state[cid] = RUNNING
        self.versions[cid] = policy[1]
        if (address := self.c.where("collector").get(cid)) is not None:
            self.c.addresses[cid] = address
        if evaluate:
            self.evaluator = cid
        self.c.save("start")
        out = outcome.result or {}
        where = f", {out.get('num_envs')} env copies on {out.get('device')}" if out else ""
        self.c.logger.info(f"collector {cid} started (seed {data['seed']}{where})")

    # --- data ----------------------------------------------------------------------------
    def poll(self) -> None:
        """Harvests answered data tasks, sends new ones, and notices lost collectors."""
        alive = set(self.c.transport.worker_ids("collector"))
        for cid, state in list(self.state.items()):
            if state == RUNNING and cid not in alive:
                self.state[cid] = LOST
                self._polls.pop(cid, None)
                self.c.logger.warning(f"collector {cid} lost (no heartbeat, or its process ended)")
                self.c.worker_failed(cid, "collector", "lost")
        for cid, future in list(self._polls.items()):
            if future.done():
                del self._polls[cid]
                self._harvest(cid, future.result())
        now = time.monotonic()
        for cid in self.running():
            if cid in self._polls or now < self._idle_until.get(cid, 0.0):
                continue
            if self._backoff.ready(cid):
                self._polls[cid] = self.c.transport.send_task_async(
                    cid, "collector_data_task", {}, self.c.cfg.system.http_timeout
                )
        self._syncs = [s for s in self._syncs if not self._sync_done(*s)]
        self.c.status.collectors_alive = len(self.running())

    def _harvest(self, cid: str, outcome: Any) -> None:
        if outcome.success:
            try:
                self.take_output(cid, outcome.result or {})
            except ResultError as err:
                self._failed(cid, f"bad result: {err}")
                return
            self._backoff.succeeded(cid)
            self._failures[cid] = 0
            self.c.status.control_latency_s.append(outcome.elapsed_s)
            if not (outcome.result or {}).get("files"):
                wait = idle_poll_interval(len(self.state))
                self._idle_until[cid] = time.monotonic() + wait
        else:
            self._failed(cid, outcome.error)

    def _failed(self, cid: str, error: str) -> None:
        self.c.status.failed_tasks += 1
        delay = self._backoff.failed(cid)
        self._quiet("error", cid, f"data task on {cid} failed ({error}); next try in {delay:.2f} s")
        if error.startswith("timed out"):
            return  # a slow or paused collector: its heartbeats decide whether it is lost
        if "DiskFullError" in error or "No space left on device" in error:
            self.c.stop_run(stop.DISK_FULL, f"collector {cid} cannot write: {error}")
            return
        self._failures[cid] = self._failures.get(cid, 0) + 1
        if self._failures[cid] >= MAX_DATA_FAILURES and self.state.get(cid) == RUNNING:
            self.state[cid] = FAILED
            self.c.logger.error(f"collector {cid} failed {MAX_DATA_FAILURES} data tasks in a row")
            self.c.worker_failed(cid, "collector", error)

    def take_output(self, cid: str, out: dict[str, Any]) -> None:
        """Books a collector's data or close result (validated first; raises ResultError)."""
        c, ev = self.c, self.c.cfg.evaluator
        checked = check_collector_output(
            out,
            policy_version=c.status.policy_version,
            n_episodes=ev.n_episodes,
            stop_value=ev.stop_value,
            may_evaluate=cid == self.evaluator,
        )
        c.rollouts.offer_all(checked["paths"])
        if checked["envstep"] is not None:
            self.envsteps[cid] = checked["envstep"]
        c.status.episode_returns.extend(checked["episode_returns"])
        c.status.episode_outcomes.extend(checked["episode_outcomes"])
        c.status.sync_latency_s.extend(checked["sync_latency_s"])
        for report in checked["evals"]:
            self.record_eval(report)
        if checked["evals"]:
            self.c.save("eval")
        for why in checked["refused_evals"]:
            c.logger.warning(f"refused an evaluation from {cid}: {why}")

    def record_eval(self, report: dict[str, Any]) -> None:
        """Books an evaluation (already checked and re-judged by ``checks``)."""
        c, win = self.c, report["win_rate"]
        win_text = "" if win is None else f", win rate {win:.1%}"
        c.logger.info(
            f"eval of policy v{report['policy_version']}: return "
            f"{report['return_mean']:.2f} over {report['n_episodes']} episodes{win_text}"
        )
        if report["policy_version"] == 0 and c.cfg.evaluator.get("before_train"):
            c.status.eval_before_train = {k: report[k] for k in ("return_mean", "win_rate")}
            report = {**report, "solved": False}  # an evaluation before training never solves
        best = c.status.best_eval
        if best is None or report["return_mean"] > best["return_mean"]:
            # The learner writes ckpt/best.pt from this version's policy file.
            c.status.best_eval = {k: report[k] for k in ("policy_version", "return_mean")}
        if c.status.solved:
            return  # the evaluation that solved the run stays the run's figure
        c.status.eval_return, c.status.eval_win_rate = report["return_mean"], win
        c.status.eval_policy_version = report["policy_version"]
        c.status.eval_seconds = report.get("seconds")
        c.status.solved = report["solved"]

    # --- policy sync ---------------------------------------------------------------------
    def sync(self, policy: tuple[str, int, float], rollback: bool = False) -> None:
        """Sends the policy to every running collector (asynchronously)."""
        path, version, published_at = policy
        data = {"path": path, "version": version, "published_at": published_at}
        if rollback:
            data["rollback"] = True
        running = self.running()
        if running and self.evaluator not in running:
            self.evaluator = running[0]  # the evaluating collector was lost: hand it over
            self.c.logger.warning(f"collector {self.evaluator} takes over evaluation")
        for cid in running:
            task = {**data, "evaluate": True} if cid == self.evaluator else data
            future = self.c.transport.send_task_async(
                cid, "collector_policy_sync_task", task, self.c.cfg.system.http_timeout
            )
            self._syncs.append((cid, version, future))

    def _sync_done(self, cid: str, version: int, future: Future) -> bool:
        if not future.done():
            return False
        outcome = future.result()
        if not outcome.success:
            self.c.status.failed_tasks += 1
            self._quiet("error", f"sync-{cid}", f"policy sync on {cid} failed: {outcome.error}")
        else:
            self.versions[cid] = version
        return True

    # --- close ---------------------------------------------------------------------------
    def close(self, timeout: float, final_eval: bool) -> None:
        """Closes every running collector and books what they had not handed over."""
        deadline = time.monotonic() + timeout
        futures = {}
        # A start that never got its answer (Ctrl-C while it was on its way) may have
        # started the collector all the same: close it too, so what it wrote is booked.
        alive = set(self.c.transport.worker_ids("collector"))
        starting = [c for c in self.index if c not in self.state and c in alive]
        for cid in self.running() + starting:
            data = {"final_eval": final_eval and cid == self.evaluator}
            futures[cid] = self.c.transport.send_task_async(
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
                    self.c.logger.error(f"close of {cid}: bad result: {err}")
        for _, _, future in self._syncs:
            _wait(future, deadline)


def _wait(future: Future, deadline: float) -> None:
    try:
        future.exception(timeout=max(deadline - time.monotonic(), 0.0))
    except Exception:  # a timeout: the master fails the task itself when it stops
        pass
