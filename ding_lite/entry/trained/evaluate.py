"""``ding-lite eval``: evaluation of a checkpoint with its experiment's eval mode, for any
experiment (deterministic actions unless ``policy.eval.deterministic`` is false)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_config
from ding_lite.envs.from_config import build_env
from ding_lite.policy import policy_from_checkpoint
from ding_lite.utils.device import resolve_device
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.rng import set_seed
from ding_lite.utils.stats import wilson_interval
from ding_lite.utils.threads import torch_threads
from ding_lite.worker.collector.evaluator import EvalResult, Evaluator
from ding_lite.worker.learner.base_learner import read_checkpoint


def evaluate_checkpoint(
    cfg: str | Mapping,
    ckpt: str | Path,
    *,
    episodes: int = 100,
    seed: int | None = None,
    device: str | None = None,
    overrides: Iterable[str] | Mapping = (),
) -> dict[str, Any]:
    """Runs ``episodes`` evaluation episodes (one per env copy) with a checkpoint's policy.

    Args:
        cfg: the experiment the checkpoint was trained with (name, file or dict).
        ckpt: a checkpoint file, or a folder (its newest ``ckpt_iter*.pt``).
        episodes: episodes to run.
        seed: seed of the eval env (default: the config's seed).
        device, overrides: as for the pipelines.

    Returns:
        ``{"return_mean", "return_std", "ci95", "n_episodes", "length_mean", "checkpoint",
        "train_iter"}``; for envs that report episode outcomes also ``win_rate``,
        ``loss_rate``, ``draw_rate``, each with its 95% Wilson score interval under
        ``win_rate_ci95``, ``loss_rate_ci95``, ``draw_rate_ci95``.

    Raises:
        ConfigError: bad config or episode count. CheckpointError: missing, corrupt or
        mismatching checkpoint.
    """
    if episodes < 1:
        raise ConfigError(f"--episodes must be at least 1, got {episodes}")
    run_cfg = compile_config(cfg, overrides, seed=seed, device=device)
    path, state = read_checkpoint(ckpt)
    set_seed(run_cfg.seed)
    dev = resolve_device(run_cfg.device)
    with torch_threads(run_cfg.system.torch_threads):
        env = build_env(run_cfg, episodes, dev, run_cfg.seed, evaluation=True)
        policy = policy_from_checkpoint(
            run_cfg, path, state, obs_shape=env.obs_shape, action_space=env.action_space, device=dev
        )
        result = Evaluator(env, policy.eval_mode, seed=run_cfg.seed).eval()
    return eval_report(result, path, state)


def eval_report(result: EvalResult, path: Path, state: dict[str, Any]) -> dict[str, Any]:
    """What :func:`evaluate_checkpoint` returns, from an evaluation of checkpoint ``path``
    (its content ``state``)."""
    half = 1.96 * result.return_std / math.sqrt(max(result.n_episodes, 1))
    report = {
        "checkpoint": str(path),
        "train_iter": int(state["train_iter"]),
        "n_episodes": result.n_episodes,
        "return_mean": result.return_mean,
        "return_std": result.return_std,
        "ci95": [result.return_mean - half, result.return_mean + half],
        "length_mean": result.length_mean,
    }
    report.update(_outcome_report(result))
    return report


def _outcome_report(result: EvalResult) -> dict[str, Any]:
    """Win, loss and draw rates with 95% Wilson intervals; empty without outcomes."""
    n = result.n_episodes
    if result.wins is None or n == 0:
        return {}
    report: dict[str, Any] = {}
    for name, k in (("win", result.wins), ("loss", result.losses), ("draw", result.draws)):
        assert k is not None  # an env that reports outcomes counts all three
        report[f"{name}_rate"] = k / n
        report[f"{name}_rate_ci95"] = list(wilson_interval(k, n))
    return report
