"""Schemas of the task results the coordinator acts on.

Even a worker holding the token is not trusted: every field the coordinator uses is checked
for type, range and finiteness, every path must lie inside the run's folders, and a result
that fails counts as a failed task and changes nothing. Evaluations are re-judged here (the
coordinator compares the mean return with ``stop_value`` itself).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ding_lite.utils.paths import is_inside
from ding_lite.utils.stop import STOP_REASONS

MAX_LIST = 100_000  # longest list a result may carry (episode returns, latencies, files)
MAX_SAMPLES = 1 << 31
MAX_AGENTS = 4096  # agents per env copy an evaluation may report
_CKPT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}\.pt")  # a file name, never a path


class ResultError(ValueError):
    """A task result the coordinator refuses (the message names the field)."""


def _int(out: dict, key: str, low: int = 0, high: int = MAX_SAMPLES) -> int:
    value = out.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ResultError(f"field '{key}' must be an int in [{low}, {high}], got {value!r:.60}")
    return value


def _float(value: Any, key: str, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ResultError(f"field '{key}' must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or not low <= value <= high:
        raise ResultError(f"field '{key}' must be finite in [{low}, {high}], got {value!r}")
    return value


def _floats(out: dict, key: str, low: float = -math.inf, high: float = math.inf) -> list[float]:
    values = out.get(key, [])
    if not isinstance(values, list) or len(values) > MAX_LIST:
        raise ResultError(f"field '{key}' must be a list of at most {MAX_LIST} numbers")
    return [_float(v, key, low, high) for v in values]


def _path(value: Any, key: str, root: str | Path) -> str:
    if not isinstance(value, str) or not is_inside(value, root):
        raise ResultError(f"field '{key}' must be a path inside {root}, got {value!r:.200}")
    return value


def _paths(out: dict, key: str) -> list[str]:
    values = out.get(key, [])
    if not isinstance(values, list) or len(values) > MAX_LIST:
        raise ResultError(f"field '{key}' must be a list of paths")
    if not all(isinstance(v, str) for v in values):
        raise ResultError(f"field '{key}' must hold strings only")
    return values


def check_policy(out: dict, path_policy: str | Path) -> tuple[str, int, float]:
    """``(policy_path, policy_version, published_at)`` of a learner's start or learn result."""
    path = _path(out.get("policy_path"), "policy_path", path_policy)
    version = _int(out, "policy_version")
    return path, version, _float(out.get("published_at", 0.0), "published_at")


def check_learner_start(out: dict, path_policy: str | Path) -> dict[str, Any]:
    path, version, published = check_policy(out, path_policy)
    return {
        "policy_path": path,
        "policy_version": version,
        "published_at": published,
        "envstep": _int(out, "envstep"),
        "batch_size": _int(out, "batch_size", 1),
        "checkpoint": _checkpoint_name(out.get("checkpoint")),
        # Ranks of a data-parallel learner (a learner that does not say is one).
        "ranks": _int({"ranks": out.get("ranks", 1)}, "ranks", 1, 1 << 16),
        "running": _flag(out, "running"),
    }


def _flag(out: dict, key: str) -> bool:
    """A boolean field that may be left out (False)."""
    value = out.get(key, False)
    if not isinstance(value, bool):
        raise ResultError(f"field '{key}' must be a boolean, got {value!r:.40}")
    return value


def _checkpoint_name(value: Any) -> str | None:
    """The name of the checkpoint file a learner resumed from (None: it started afresh)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _CKPT_NAME.fullmatch(value):
        raise ResultError(f"field 'checkpoint' must be a checkpoint file name, got {value!r:.80}")
    return value


def check_learner_state(out: dict) -> tuple[str | None, str]:
    """``(stop_reason, error)`` a learner reports: None while its training thread is fine."""
    reason, error = out.get("stop_reason"), out.get("error") or ""
    if reason is not None and reason not in STOP_REASONS:
        raise ResultError(f"field 'stop_reason' must be one of {STOP_REASONS}, got {reason!r}")
    if not isinstance(error, str):
        raise ResultError("field 'error' must be a string")
    return reason, error[:500]


def check_received(out: dict) -> list[str]:
    """The rollout files a learner on the http plane says it holds (the ledger checks each
    path and name; files it knows are not counted again)."""
    received = out.get("received") or []
    if not isinstance(received, list) or not all(isinstance(p, str) for p in received):
        raise ResultError("field 'received' must be a list of paths")
    return received


def check_learn_info(out: dict, path_policy: str | Path) -> dict[str, Any]:
    """The fields of a learn task's result the coordinator uses."""
    if not isinstance(out.get("done"), bool):
        raise ResultError("field 'done' must be a boolean")
    outcome = {k: _paths(out, k) for k in _OUTCOME_KEYS}
    trained = bool(outcome["trained"])  # an iteration ran exactly when it trained on files
    info: dict[str, Any] = {
        "trained": trained,
        "done": out["done"],
        "done_reason": out.get("done_reason"),
        "iteration": _int(out, "iteration"),
        "outcome": outcome,
    }
    if info["done_reason"] is not None and info["done_reason"] not in STOP_REASONS:
        raise ResultError(f"field 'done_reason' must be one of {STOP_REASONS}")
    info["stop_reason"], info["error"] = check_learner_state(out)
    scalars = out.get("scalars") or {}
    if trained:
        info["policy"] = check_policy(out, path_policy)
        info["policy_lag"] = _float(out.get("policy_lag", 0.0), "policy_lag", 0.0)
        info["policy_lag_max"] = int(_float(out.get("policy_lag_max", 0), "policy_lag_max", 0.0))
        minibatches = scalars.get("minibatches") if isinstance(scalars, dict) else None
        info["minibatches"] = int(_float(minibatches or 0, "minibatches", 0.0))
    skipped = scalars.get("skipped_steps") if isinstance(scalars, dict) else None
    info["skipped_steps"] = None if skipped is None else int(_float(skipped, "skipped_steps", 0))
    info["best_checkpoint"] = check_best(out)
    return info


def check_best(out: dict) -> dict[str, Any] | None:
    """What the learner's ``ckpt/best.pt`` holds, as it reports it (field ``best``)."""
    best = out.get("best")
    if best is None:
        return None
    if not isinstance(best, dict):
        raise ResultError("field 'best' must be an object or null")
    return {
        "policy_version": _int(best, "policy_version"),
        "return_mean": _float(best.get("return_mean"), "best.return_mean"),
    }


_OUTCOME_KEYS = ("trained", "dropped_stale", "dropped_invalid", "dropped_rollback")


def check_collector_output(
    out: dict,
    *,
    policy_version: int,
    n_episodes: int,
    stop_value: float | None,
    may_evaluate: bool,
) -> dict[str, Any]:
    """The fields of a collector's data (or close) result; evaluations re-judged.

    Args:
        policy_version: the newest version published; an evaluation of a later one is forged.
        n_episodes: episodes an evaluation must report (``evaluator.n_episodes``).
        stop_value: the mean return that solves the run (None: never).
        may_evaluate: whether this collector is the one asked to evaluate.
    """
    files = out.get("files", [])
    if not isinstance(files, list) or len(files) > MAX_LIST:
        raise ResultError("field 'files' must be a list")
    paths = [f.get("path") if isinstance(f, dict) else f for f in files]
    evals = out.get("evals", [])
    if not isinstance(evals, list) or (evals and not may_evaluate):
        raise ResultError("field 'evals': only the evaluating collector reports evaluations")
    return {
        "paths": paths,  # each checked by the rollout queue (inside path_data, a rollout name)
        "envstep": _int(out, "envstep") if "envstep" in out else None,
        "episode_returns": _floats(out, "episode_returns"),
        "episode_outcomes": _floats(out, "episode_outcomes", -1.0, 1.0),
        "sync_latency_s": _floats(out, "sync_latency_s", 0.0),
        **_check_evals(evals, policy_version, n_episodes, stop_value),
    }


def _check_evals(
    evals: list, policy_version: int, n_episodes: int, stop_value: float | None
) -> dict[str, list]:
    """Valid evaluations, and why the others were refused (e.g. one of a policy version a
    rollback undid arrives late): a bad one is dropped alone, the rest of the result counts."""
    good, bad = [], []
    for report in evals:
        try:
            good.append(_check_eval(report, policy_version, n_episodes, stop_value))
        except ResultError as err:
            bad.append(str(err))
    return {"evals": good, "refused_evals": bad}


def _check_eval(
    report: Any, policy_version: int, n_episodes: int, stop_value: float | None
) -> dict[str, Any]:
    if not isinstance(report, dict):
        raise ResultError("an evaluation must be an object")
    version = _int(report, "policy_version", 0, policy_version)
    # An env with several agents per copy counts each agent's episode (evaluator.Evaluator).
    agents = _int(report, "agents", 1, MAX_AGENTS) if "agents" in report else 1
    if report.get("n_episodes") != n_episodes * agents:
        per_agent = f" ({agents} agents in each of {n_episodes} copies)" if agents > 1 else ""
        raise ResultError(f"an evaluation must cover {n_episodes * agents} episodes{per_agent}")
    mean = _float(report.get("return_mean"), "return_mean")
    win, seconds = report.get("win_rate"), report.get("seconds")
    return {
        "seconds": None if seconds is None else _float(seconds, "seconds", 0.0),
        "policy_version": version,
        "return_mean": mean,
        "n_episodes": n_episodes * agents,
        "win_rate": None if win is None else _float(win, "win_rate", 0.0, 1.0),
        "solved": stop_value is not None and mean >= stop_value,
    }
