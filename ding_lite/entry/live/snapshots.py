"""What status.json says of a run: one snapshot function per pipeline.

Each reads the run's own objects from the status writer's thread and copies plain figures;
see :mod:`.status_file` for the file and :doc:`/monitoring` for every field.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

from ding_lite.coordinator.state import STARTING
from ding_lite.entry.reporting.league_table import league_status_of_run
from ding_lite.utils.stop import INTERRUPTED, SUCCESS_REASONS

RATE_WINDOW_S = 10.0  # the status SPS is over about this many recent seconds


class RateMeter:
    """Env steps per second over the last ``window`` seconds (the whole run until then)."""

    def __init__(self, window: float = RATE_WINDOW_S) -> None:
        self.window = window
        self._points: collections.deque[tuple[float, int]] = collections.deque()

    def __call__(self, envstep: int) -> float:
        now = time.monotonic()
        points = self._points
        if points and envstep < points[-1][1]:
            points.clear()  # a resumed or rolled-back count: start over
        points.append((now, envstep))
        while len(points) > 2 and now - points[1][0] >= self.window:
            points.popleft()
        (t0, s0), (t1, s1) = points[0], points[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0


def final_state(stop_reason: str | None) -> str:
    """The state a run that stopped for ``stop_reason`` ends in."""
    if stop_reason in SUCCESS_REASONS:
        return "finished"
    return "interrupted" if stop_reason == INTERRUPTED else "failed"


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def serial_snapshot(run: Any, host: str) -> Callable[[], dict[str, Any]]:
    """The snapshot function of a serial run (``entry.serial.SerialRun``)."""
    rate = RateMeter()

    def snapshot() -> dict[str, Any]:
        collector, learner, ev = run.collector, run.learner, run.last_eval
        envstep, iteration = int(collector.envstep), int(learner.train_iter)
        rates = collector.outcome_rates()
        best = run.best.return_mean
        return {
            "iteration": iteration,
            "envstep": envstep,
            "max_env_step": run.cfg.max_env_step,
            "sps": round(rate(envstep), 1),
            "train_return": _round(collector.mean_recent_return()),
            "train_win_rate": None if rates is None else _round(rates["win_rate"]),
            "policy_version": iteration,  # the serial policy changes once per iteration
            "eval": None if ev is None else _eval(ev.return_mean, ev.win_rate, *run.eval_at),
            "best_eval": None if best is None else {"return_mean": _round(best)},
            "workers": [
                {
                    "id": "serial",
                    "role": "serial",
                    "host": host,
                    "state": run.live.state if run.live is not None else "starting",
                    "heartbeat_age_s": 0.0,
                    "version": iteration,
                    "rollouts": iteration,  # one rollout per iteration
                }
            ],
            "lag": {"recent": [], "mean": 0.0, "max": 0},  # serial data is never stale
            "ledger": None,  # no rollout files: the serial collector hands data over in memory
            "restarts": 0,
            "failed_tasks": 0,
            "dropped_env_steps": 0,
            "gradient_steps": int(run.gradient_steps),
            "waiting_on": "",
            "stop_reason": run.stop_reason,
            "league": None if run.league is None else run.league.status(),
        }

    return snapshot


def _eval(
    return_mean: float | None, win_rate: float | None, version: int | None, envstep: int | None
) -> dict[str, Any]:
    return {
        "return_mean": _round(return_mean),
        "win_rate": _round(win_rate),
        "policy_version": version,
        "envstep": envstep,
    }


def parallel_snapshot(get_coordinator: Callable[[], Any], master: Any) -> Callable[[], dict]:
    """The snapshot function of a parallel run's coordinator process.

    ``get_coordinator`` returns the :class:`~ding_lite.coordinator.Coordinator` (None while
    it is being built); ``master`` serves the workers (``workers()``: who is registered).
    """
    rate = RateMeter()

    def snapshot() -> dict[str, Any]:
        infos = {w.worker_id: w for w in master.workers()}
        c = get_coordinator()
        if c is None:  # starting: the workers that registered so far
            return {"workers": _workers(infos, None), "waiting_on": "the coordinator to start"}
        st, envstep = c.status, int(c.status.envstep)
        eval_ = None
        if st.eval_return is not None:
            eval_ = _eval(st.eval_return, st.eval_win_rate, st.eval_policy_version, None)
        outcomes = list(st.episode_outcomes[-100:])
        return {
            "iteration": int(st.train_iter),
            "envstep": envstep,
            "max_env_step": c.cfg.max_env_step,
            "sps": round(rate(envstep), 1),
            "train_return": _mean(st.episode_returns[-100:]),
            "train_win_rate": _mean([1.0 if o > 0 else 0.0 for o in outcomes]),
            "policy_version": int(st.policy_version),
            "eval": eval_,
            "best_eval": _best(st.best_eval),
            "workers": _workers(infos, c),
            "lag": {
                "recent": [round(x, 3) for x in st.recent_lags],
                "mean": round(st.policy_lag_mean, 4),
                "max": int(st.policy_lag_max),
            },
            "ledger": c.rollouts.live(),
            "restarts": int(st.restarts),
            "failed_tasks": int(st.failed_tasks),
            "dropped_env_steps": int(st.dropped_env_steps),
            "gradient_steps": int(st.gradient_steps),
            "waiting_on": "" if st.stop_reason else c.waiting_on(),
            "stop_reason": st.stop_reason,
            "stop_detail": st.stop_detail,
            "league": league_status_of_run(c.cfg.exp_dir) if c.cfg.league.enabled else None,
        }

    return snapshot


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _host(address: str) -> str:
    """``host`` of a ``host:port`` address (a URL's scheme and path left out)."""
    netloc = address.split("://", 1)[-1].split("/", 1)[0]
    return netloc.rsplit(":", 1)[0].strip("[]") if ":" in netloc else netloc


def _workers(infos: dict[str, Any], c: Any) -> list[dict[str, Any]]:
    """Every worker: registered ones with their heartbeat, and collectors the coordinator
    knows that are gone (lost or failed, with no heartbeat)."""
    now = time.monotonic()
    records = {} if c is None else c.state.collectors
    states = {cid: r.state for cid, r in records.items() if r.state != STARTING}
    rows = []
    for wid in sorted(set(infos) | set(states)):
        info = infos.get(wid)
        role = info.role if info is not None else "collector"
        row: dict[str, Any] = {
            "id": wid,
            "role": role,
            "host": None if info is None else _host(info.address),
            "heartbeat_age_s": None if info is None else round(now - info.last_seen, 2),
            "version": None,
            "rollouts": None,
        }
        if role == "collector":
            row["state"] = states.get(wid, "registered")
            if c is not None:
                row["version"] = records[wid].version if wid in records else None
                row["rollouts"] = c.rollouts.written_by.get(wid, 0)
                row["evaluates"] = wid == c.state.evaluator
        else:
            current = c is not None and wid == c.state.learner
            row["state"] = "training" if current else "standby"
            row["version"] = int(c.status.policy_version) if current else None
        if info is not None and not info.alive:
            row["state"] = "silent"
        rows.append(row)
    return rows


def _best(best: dict[str, Any] | None) -> dict[str, Any] | None:
    if not best:
        return None
    return {"policy_version": best["policy_version"], "return_mean": _round(best["return_mean"])}
