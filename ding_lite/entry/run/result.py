"""What a run reports when it ends, the same for both pipelines: the figures of
``result.json`` (:class:`RunFigures`, :func:`build_result`) and its closing lines
(:func:`summary`)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from easydict import EasyDict

from ding_lite.utils.paths import BEST_CKPT


@dataclass
class RunFigures:
    """What both pipelines report of a run (``result.json``'s shared keys).

    Attributes:
        solved: an evaluation reached ``evaluator.stop_value``.
        stop_reason: why the run ended (``ding_lite.utils.stop.STOP_REASONS`` or a hook's).
        eval_return_mean: mean return of the last evaluation (None: none ran).
        eval_episodes: episodes that evaluation covered (0: none ran).
        train_return_mean: mean return of the recent training episodes (None: none ended).
        envstep: env steps collected in total.
        train_iter: iterations done in total.
        wall_s: seconds of the whole call.
        sps: env steps per second of this run's own steps (a resumed run's earlier steps
            left out).
        has_best_checkpoint: ``ckpt/best.pt`` exists.
        best_eval_return: the best evaluation's mean return.
        skipped_steps: optimizer steps skipped for non-finite losses or gradients.
        restarts: workers restarted after a failure (0 in a serial run).
        policy_lag_mean: the mean over this run's iterations of the policy lag of the
            rollouts each trained on (versions between collection and update; 0 serial).
        policy_lag_max: the largest lag of any rollout trained on (0 in a serial run).
        dropped_env_steps: env steps collected but dropped (stale, invalid or rolled back;
            not those left over at the run's end).
        gradient_steps: minibatches trained on in this run.
    """

    solved: bool
    stop_reason: str | None
    eval_return_mean: float | None
    eval_episodes: int
    train_return_mean: float | None
    envstep: int
    train_iter: int
    wall_s: float
    sps: float
    has_best_checkpoint: bool
    best_eval_return: float | None
    skipped_steps: int
    restarts: int
    policy_lag_mean: float = 0.0
    policy_lag_max: int = 0
    dropped_env_steps: int = 0
    gradient_steps: int = 0


def build_result(cfg: EasyDict, figures: RunFigures, **extra: Any) -> dict[str, Any]:
    """The content of ``result.json``: the config's identity, ``figures`` and the
    pipeline's own ``extra`` keys, every float rounded by :func:`round_figure`."""
    shared = asdict(figures)
    best = f"ckpt/{BEST_CKPT}" if shared.pop("has_best_checkpoint") else None
    result = {
        "exp_name": cfg.exp_name,
        "exp_dir": str(cfg.exp_dir),
        "env": cfg.env.name,
        "seed": cfg.seed,
        "stop_value": cfg.evaluator.stop_value,
        **shared,
        "best_checkpoint": best,
        **extra,
    }
    return _rounded(result)


def round_figure(value: float) -> float:
    """3 decimals, or 4 significant digits below 1 (0.0001234): enough to compare runs,
    without 16 digits of noise."""
    if not math.isfinite(value) or value == 0:
        return value
    return round(value, max(3, 3 - math.floor(math.log10(abs(value)))))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round_figure(value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


MAX_RESULT_BYTES = 16 * 2**20  # a larger result.json was not written by ding_lite


def read_result(path: str | os.PathLike) -> dict[str, Any] | None:
    """A ``result.json`` that is there and well formed: a JSON object with every figure of
    :class:`RunFigures` of its type, ``exp_dir`` and, when there, a ledger of counts. None
    for anything else (missing, unreadable, cut short, edited into another shape): a
    reader believes only what it can check."""
    try:
        with Path(path).open("rb") as file:
            data = file.read(MAX_RESULT_BYTES + 1)
        result = json.loads(data.decode()) if len(data) <= MAX_RESULT_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(result, dict) or not isinstance(result.get("exp_dir"), str):
        return None
    kinds = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}  # by name
    for f in fields(RunFigures):
        if f.name == "has_best_checkpoint":  # written as best_checkpoint (a path or null)
            continue
        value, hint = result.get(f.name, ...), f.type.removesuffix(" | None")
        if value is None and hint != f.type:
            continue
        if not isinstance(value, kinds[hint]) or (hint != "bool" and isinstance(value, bool)):
            return None
    ledger = result.get("ledger", {})
    if not isinstance(ledger, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in ledger.values()
    ):
        return None
    return result


def summary(result: dict[str, Any]) -> str:
    """The closing lines of both pipelines: the outcome, why a failed run stopped, the
    ledger of every rollout (parallel runs), and the run dir."""
    state = "solved" if result["solved"] else f"not solved ({result['stop_reason']})"
    ev, win = result["eval_return_mean"], result.get("eval_win_rate")
    eval_text = "-" if ev is None else f"{ev:.2f} over {result['eval_episodes']} episodes"
    win_text = "" if win is None else f" (win rate {win:.1%})"
    restarts = f", {result['restarts']} restart(s)" if result.get("restarts") else ""
    lines = [
        f"{state}: eval return {eval_text}{win_text}, {result['envstep']} env steps, "
        f"{result['train_iter']} iterations, {result['wall_s']:.1f} s "
        f"({result['sps']:,.0f} SPS){restarts}"
    ]
    if result.get("stop_detail"):
        lines.append(f"stopped: {result['stop_detail']}")
    if result.get("ledger"):
        lines.append("rollouts: " + ", ".join(f"{k} {v}" for k, v in result["ledger"].items()))
    lines.append(f"run dir: {result['exp_dir']}")
    return "\n".join(lines)
