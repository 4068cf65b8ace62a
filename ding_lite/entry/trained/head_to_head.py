"""Head-to-head evaluation (``ding-lite eval --against``, ``--cross``) on an env with two
sides: a checkpoint's policy flies agent 0 (P1), an opponent agent 1, for whole episodes.

An opponent is named by a spec:

- a run dir, its ``ckpt/`` folder or a checkpoint file: that run's policy, built from its
  own ``config.json`` (a run dir: its ``best.pt``, as ``ding-lite eval`` picks), with
  sampled actions and its own observation statistics; a policy trained on a smaller
  observation of the env reads the leading features of this one's (air combat's
  ``observe="base"`` are the first 10 of ``"missiles"``);
- ``member:NAME``: a member of the evaluated run's league (``<run dir>/league/NAME.pt``,
  the names ``ding-lite league RUN_DIR`` lists), on the evaluated policy's model;
- any other word: one of the env's scripted agents (``evaluator.env_kwargs.opponent``,
  e.g. ``rule_based`` in air combat).

A policy opponent plays the env in its two-agent form: the evaluation env's settings
(``evaluator.env_kwargs`` over ``env.kwargs``) with ``opponent=self`` where the env takes
an opponent, agent 1 seated with the opponent (:class:`~ding_lite.envs.seats.SeatedEnv`).
The episodes' outcomes are P1's: win, loss, draw.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_config
from ding_lite.entry.trained.evaluate import eval_report
from ding_lite.entry.trained.run_paths import locate, run_dir_of
from ding_lite.envs.from_config import build_env
from ding_lite.envs.seats import SeatedEnv
from ding_lite.policy import policy_from_checkpoint
from ding_lite.utils.device import resolve_device
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.rng import set_seed
from ding_lite.utils.threads import torch_threads
from ding_lite.worker.collector.evaluator import Evaluator
from ding_lite.worker.collector.league_pool import Members, PolicyOpponent
from ding_lite.worker.learner.base_learner import read_checkpoint
from ding_lite.worker.learner.saved_policy import saved_arch

MEMBER = "member:"


class LargerObservation(ConfigError):
    """The opponent's policy observes more than the evaluation's env gives."""


class FixedSeating:
    """A :class:`~ding_lite.envs.seats.Seating` with one opponent at every copy."""

    def __init__(self, name: str, opponent: PolicyOpponent) -> None:
        self.name, self._opponent = name, opponent

    def pick(self, count: int) -> list[str]:
        return [self.name] * count

    def opponent(self, name: str) -> PolicyOpponent:
        return self._opponent

    def report(self, name: str, outcome: float) -> None:
        """Outcomes are counted by the evaluator."""


def is_policy_spec(spec: str) -> bool:
    """Whether ``spec`` names a policy (a member, or a path that exists) rather than a
    scripted agent."""
    return spec.startswith(MEMBER) or Path(spec).exists()


def evaluate_against(
    cfg: str | Mapping,
    ckpt: str | Path,
    spec: str,
    *,
    episodes: int = 100,
    seed: int | None = None,
    device: str | None = None,
    overrides: Iterable[str] | Mapping = (),
) -> dict[str, Any]:
    """``episodes`` matches of ``ckpt``'s policy (P1) against the policy ``spec`` names
    (see the module's description).

    Returns:
        :func:`~ding_lite.entry.trained.evaluate.evaluate_checkpoint`'s report.

    Raises:
        ConfigError: the env has not two sides, or ``spec`` names nothing usable.
        CheckpointError: a checkpoint or member that is missing, corrupt or does not fit.
    """
    run_cfg = _two_sided(compile_config(cfg, overrides, seed=seed, device=device))
    path, state = read_checkpoint(ckpt)
    set_seed(run_cfg.seed)
    dev = resolve_device(run_cfg.device)
    with torch_threads(run_cfg.system.torch_threads):
        env = build_env(run_cfg, episodes, dev, run_cfg.seed, evaluation=True)
        try:
            if getattr(env, "num_agents", 1) != 2:
                raise ConfigError(
                    f"--against a policy needs an env with two sides; env '{run_cfg.env.name}' "
                    f"has {getattr(env, 'num_agents', 1)} agent(s) a copy"
                )
            shapes: dict[str, Any] = {"obs_shape": env.obs_shape, "action_space": env.action_space}
            policy = policy_from_checkpoint(run_cfg, path, state, device=dev, **shapes)
            if spec.startswith(MEMBER):
                league = run_dir_of(Path(path)) / "league"
                opponent = Members(league, policy.model, {}).get(spec[len(MEMBER) :])
            else:
                opponent = _run_opponent(spec, run_cfg, dev, shapes)
            seated = SeatedEnv(env, FixedSeating(spec, opponent))
            result = Evaluator(seated, policy.eval_mode, seed=run_cfg.seed).eval()
        finally:
            env.close()
    return eval_report(result, path, state)


def scripted_overrides(cfg: str | Mapping, spec: str, overrides: Iterable[str]) -> list[str]:
    """``overrides`` with the scripted agent ``spec`` as the evaluation's opponent.

    Raises:
        ConfigError: the env takes no opponent (``spec`` names no file either).
    """
    run_cfg = compile_config(cfg, overrides)
    if "opponent" not in {**run_cfg.env.kwargs, **run_cfg.evaluator.env_kwargs}:
        raise ConfigError(
            f"--against {spec}: no such run dir or checkpoint, and env '{run_cfg.env.name}' "
            "has no scripted opponents"
        )
    return [*overrides, f"evaluator.env_kwargs.opponent={spec}"]


def _two_sided(cfg: Any) -> Any:
    """``cfg`` with its evaluation env in the two-agent form: ``opponent=self`` (and no
    ``opponent_kwargs``) where the env takes an opponent."""
    merged = {**cfg.env.kwargs, **cfg.evaluator.env_kwargs}
    if "opponent" not in merged:
        return cfg
    out = copy.deepcopy(cfg)
    out.evaluator.env_kwargs = {**cfg.evaluator.env_kwargs, "opponent": "self"}
    out.evaluator.env_kwargs.pop("opponent_kwargs", None)
    out.env.kwargs.pop("opponent_kwargs", None)
    return out


def _run_opponent(spec: str, cfg: Any, device: Any, shapes: dict[str, Any]) -> PolicyOpponent:
    """The policy of the run dir, ``ckpt/`` folder or checkpoint file ``spec``."""
    given = Path(spec)
    paths = locate(spec, None, None) if (given / "ckpt").is_dir() else locate(None, None, spec)
    other = compile_config(paths.config, device=str(device))
    if other.env.name != cfg.env.name:
        raise ConfigError(
            f"--against {spec}: its policy was trained on env '{other.env.name}', this one "
            f"plays '{cfg.env.name}'"
        )
    path, state = read_checkpoint(paths.ckpt)
    features = _leading_features(spec, state, shapes["obs_shape"])
    own = shapes if features is None else {**shapes, "obs_shape": (features,)}
    policy = policy_from_checkpoint(other, path, state, device=device, **own)
    return PolicyOpponent(policy.model.eval().requires_grad_(False), features)


def _leading_features(spec: str, state: dict[str, Any], obs_shape: tuple[int, ...]) -> int | None:
    """How many leading features of this env's observations the opponent's policy reads,
    where it was trained on a smaller observation of the env (None: the env's own shape, or
    a checkpoint that does not record its shape).

    Raises:
        LargerObservation: it observes more than this env gives.
        ConfigError: it observes a shape of another form.
    """
    arch = saved_arch(state)
    if arch is None or "obs_shape" not in arch:
        return None
    saved, given = tuple(int(s) for s in arch["obs_shape"]), tuple(obs_shape)
    if saved == given:
        return None
    if len(saved) == len(given) == 1 and saved[0] < given[0]:
        return saved[0]
    fault = LargerObservation if math.prod(saved) > math.prod(given) else ConfigError
    raise fault(
        f"--against {spec}: its policy observes {list(saved)}, this evaluation's env gives "
        f"{list(given)}; play the policy with the larger observation as P1"
    )


def cross_play(
    run_dirs: Sequence[str | Path],
    *,
    episodes: int = 100,
    seed: int | None = None,
    device: str | None = None,
) -> list[list[Any]]:
    """Every run's ``best.pt`` (P1, rows) against every run's (P2, columns), itself
    included: a matrix of :func:`evaluate_against`'s reports, None where the column's
    policy observes more than the row's env gives (a run trained on a smaller observation
    of the env can be P2 of a larger one's, not P1)."""
    if len(run_dirs) < 2:
        raise ConfigError(f"--cross needs two run dirs or more, got {len(run_dirs)}")
    located = [locate(str(run), None, None) for run in run_dirs]
    matrix: list[list[Any]] = []
    for mine in located:
        row: list[dict[str, Any] | None] = []
        for other in run_dirs:
            try:
                row.append(
                    evaluate_against(
                        mine.config,
                        mine.ckpt,
                        str(other),
                        episodes=episodes,
                        seed=seed,
                        device=device,
                    )
                )
            except LargerObservation:
                row.append(None)
        matrix.append(row)
    return matrix
