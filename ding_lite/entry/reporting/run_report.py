"""What a parallel run shows while it runs and leaves behind: status lines, tensorboard
figures of the whole run, and the figures of its result.json."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from ding_lite.coordinator import RunStatus
from ding_lite.entry.live.snapshots import final_state, parallel_snapshot
from ding_lite.entry.live.status_file import StatusWriter
from ding_lite.entry.run.result import RunFigures, build_result, summary
from ding_lite.utils.log import build_tb_logger, close_tb_logger
from ding_lite.utils.stats import count_outcomes

STATS_WINDOW = 100  # training episodes behind the status line's and result's win rate


def live_status(cfg: Any, run_path: Path, master: Any, get_coordinator: Any) -> StatusWriter:
    """Starts ``<run_path>/status.json`` of a parallel run's coordinator process."""
    snapshot = parallel_snapshot(get_coordinator, master)
    return StatusWriter(run_path, snapshot, pipeline="parallel", exp_name=cfg.exp_name).start()


def close_status(live: StatusWriter, status: RunStatus) -> None:
    """The last status.json of a parallel run: its final state, stop reason and ledger."""
    live.close(
        final_state(status.stop_reason),
        stop_reason=status.stop_reason,
        stop_detail=status.stop_detail,
    )


class StatusPrinter:
    """Prints one status line every ``interval`` seconds."""

    def __init__(self, say: Any, interval: float, master: Any, start: float) -> None:
        self.say, self.interval, self.master, self.start = say, interval, master, start
        self._last = start

    def __call__(self, status: RunStatus) -> None:
        now = time.perf_counter()
        if now - self._last < self.interval:
            return
        self._last = now
        elapsed = now - self.start
        alive = len(self.master.worker_ids())
        eval_text = "-" if status.eval_return is None else f"{status.eval_return:.1f}"
        outcomes = status.episode_outcomes[-STATS_WINDOW:]
        win_text = f"win={_win_rate(outcomes):.0%} " if outcomes else ""
        self.say(
            f"envstep={status.envstep} SPS={status.envstep / elapsed:,.0f} "
            f"iter={status.train_iter} policy=v{status.policy_version} "
            f"lag={status.policy_lag:.2f} eval_return={eval_text} {win_text}"
            f"workers_alive={alive} elapsed={elapsed:.1f}s",
            flush=True,
        )


def each(*callbacks: Any) -> Any:
    """One status callback that calls each of ``callbacks`` in turn."""

    def call(status: RunStatus) -> None:
        for callback in callbacks:
            callback(status)

    return call


class TbStatus:
    """Writes the run-wide figures only the coordinator sees to ``<run dir>/tb/coordinator``.

    After every iteration, against the run's env steps: ``charts/episodic_return`` (mean
    of the training episodes reported since the last call), ``charts/win_rate``,
    ``charts/loss_rate`` and ``charts/draw_rate`` (last 100 training episodes, for envs that
    report outcomes), ``charts/eval_return``, ``charts/eval_win_rate`` and ``perf/eval_s``
    (the seconds it took; when a new evaluation came in), ``charts/SPS``,
    ``charts/policy_lag`` (the last iteration's mean), ``charts/policy_lag_max`` (the run's
    largest so far) and ``data/dropped_env_steps`` (env steps collected but dropped, so
    far). The learner's own figures are in ``tb/<learner id>``.
    """

    def __init__(self, log_dir: Path, status: RunStatus | None = None) -> None:
        self.writer = build_tb_logger(log_dir)
        # A coordinator that took a run back starts after what its status holds already.
        self._returns_seen = len(status.episode_returns) if status is not None else 0
        self._eval: tuple[int | None, float | None, float | None] = (None, None, None)
        self._start = time.perf_counter()

    def __call__(self, status: RunStatus) -> None:
        step, add = status.envstep, self.writer.add_scalar
        self._episodes_and_eval(status)
        add("charts/SPS", step / max(time.perf_counter() - self._start, 1e-9), step)
        add("charts/policy_lag", status.policy_lag, step)
        add("charts/policy_lag_max", status.policy_lag_max, step)
        add("data/dropped_env_steps", status.dropped_env_steps, step)

    def _episodes_and_eval(self, status: RunStatus) -> None:
        step, add = status.envstep, self.writer.add_scalar
        new_returns = status.episode_returns[self._returns_seen :]
        self._returns_seen = len(status.episode_returns)
        if new_returns:
            add("charts/episodic_return", statistics.fmean(new_returns), step)
        outcomes = status.episode_outcomes[-STATS_WINDOW:]
        if outcomes:
            for name, rate in count_outcomes(outcomes).rates().items():
                add(f"charts/{name}", rate, step)
        evaluation = (status.eval_policy_version, status.eval_return, status.eval_win_rate)
        if evaluation != self._eval and status.eval_return is not None:
            add("charts/eval_return", status.eval_return, step)
            if status.eval_win_rate is not None:
                add("charts/eval_win_rate", status.eval_win_rate, step)
            if status.eval_seconds is not None:
                add("perf/eval_s", status.eval_seconds, step)
        self._eval = evaluation

    def final(self, status: RunStatus) -> None:
        """Books what came in after the last iteration: the run's closing evaluation and
        the episodes the collectors handed over when they closed."""
        self._episodes_and_eval(status)

    def close(self, timeout: float = 5.0) -> None:
        """Closes the writer (bounded: see :func:`~ding_lite.utils.log.close_tb_logger`)."""
        close_tb_logger(self.writer, timeout)


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def _steady_sps(status: RunStatus) -> float | None:
    """Env steps per second from the first update to the end (start-up left out)."""
    if status.first_learn_at is None:
        return None
    seconds = time.perf_counter() - status.first_learn_at
    return (status.envstep - status.first_learn_envstep) / max(seconds, 1e-9)


def _win_rate(outcomes: list[float]) -> float | None:
    """Share of wins among episode outcomes (+1 win, -1 loss, 0 draw); None if none."""
    return count_outcomes(outcomes).rates()["win_rate"] if outcomes else None


def run_result(
    cfg: Any, status: RunStatus, wall: float, cpu_s: float | None = None
) -> dict[str, Any]:
    """The content of a parallel run's ``result.json``, from the coordinator's status.

    ``cpu_s``: CPU seconds of the run's coordinator processes (default: this process's)."""
    returns = status.episode_returns[-20:]
    evaluated = status.eval_return is not None
    figures = RunFigures(
        solved=status.solved,
        stop_reason=status.stop_reason,
        eval_return_mean=status.eval_return,
        # evaluator.n_episodes copies, times the agents of each (the coordinator checks).
        eval_episodes=status.eval_episodes if evaluated else 0,
        train_return_mean=statistics.fmean(returns) if returns else None,
        envstep=status.envstep,
        train_iter=status.train_iter,
        wall_s=wall,
        sps=status.envstep / max(wall, 1e-9),
        has_best_checkpoint=bool(status.best_checkpoint),
        best_eval_return=(status.best_checkpoint or {}).get("return_mean"),
        skipped_steps=status.skipped_steps,
        restarts=status.restarts,
        policy_lag_mean=status.policy_lag_mean,
        policy_lag_max=status.policy_lag_max,
        dropped_env_steps=status.dropped_env_steps,
        gradient_steps=status.gradient_steps,
    )
    return build_result(
        cfg,
        figures,
        stop_detail=status.stop_detail,
        eval_win_rate=status.eval_win_rate,
        eval_before_train=status.eval_before_train,
        train_win_rate=_win_rate(status.episode_outcomes[-STATS_WINDOW:]),
        policy_version=status.policy_version,
        dropped=status.dropped,
        ledger=dict(status.ledger),
        failed_tasks=status.failed_tasks,
        steady_sps=_steady_sps(status),
        control_p50_s=_percentile(status.control_latency_s, 0.5),
        control_p99_s=_percentile(status.control_latency_s, 0.99),
        policy_sync_p50_s=_percentile(status.sync_latency_s, 0.5),
        policy_sync_p99_s=_percentile(status.sync_latency_s, 0.99),
        learn_p50_s=_percentile(status.learn_latency_s, 0.5),
        collectors=cfg.system.collectors,
        learners=cfg.system.learners,
        learner_ranks=status.learner_ranks,
        coordinator_restarts=status.coordinator_restarts,
        # CPU seconds of the coordinator's processes (its server included) over the run.
        coordinator_cpu_s=time.process_time() if cpu_s is None else cpu_s,
    )


# ``summary`` is the closing text of both pipelines (:mod:`ding_lite.entry.run.result`).
__all__ = ["StatusPrinter", "TbStatus", "each", "run_result", "summary"]
