"""Evaluator: deterministic episodes, one per eval env copy, and the stop decision."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from ding_lite.policy.base import EvalMode
from ding_lite.utils.stats import count_outcomes


@dataclass(frozen=True)
class EvalResult:
    """Statistics of one evaluation.

    ``wins``, ``losses`` and ``draws`` count the finished episodes by outcome; they are None
    when the env reports no ``info["episode"]["outcome"]``.
    """

    return_mean: float
    return_std: float
    length_mean: float
    n_episodes: int
    solved: bool
    wins: int | None = None
    losses: int | None = None
    draws: int | None = None

    @property
    def win_rate(self) -> float | None:
        """``wins / n_episodes``; None without outcomes (NaN when no episode finished)."""
        if self.wins is None:
            return None
        return self.wins / self.n_episodes if self.n_episodes else math.nan


class Evaluator:
    """Runs the first episode of every copy of ``env`` with the policy's eval mode.

    Every evaluation resets the env with the same seed, so results are comparable.

    Args:
        env: a ``TensorVectorEnv`` with ``num_envs`` = episodes per evaluation.
        policy: the policy's ``eval_mode``.
        stop_value: mean return at which the run counts as solved (None: never).
        seed: seed of the eval env's resets.
        max_steps: safety limit on steps per evaluation (for envs without truncation).
    """

    def __init__(
        self,
        env: Any,
        policy: EvalMode,
        *,
        stop_value: float | None = None,
        seed: int = 0,
        max_steps: int = 100_000,
    ) -> None:
        self.env = env
        self.policy = policy
        self.stop_value = stop_value
        self.seed = seed
        self.max_steps = max_steps

    def eval(self) -> EvalResult:
        """Runs one episode per env copy and returns their statistics.

        Sampling eval actions (``policy.eval.deterministic=false``) draws from a forked RNG,
        so evaluating never changes the training run's random stream.
        """
        devices = [self.env.device] if self.env.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(self.seed)
            return self._eval()

    def _eval(self) -> EvalResult:
        env = self.env
        obs, _ = env.reset(seed=self.seed)
        finished = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        returns = torch.zeros(env.num_envs, device=env.device)
        lengths = torch.zeros(env.num_envs, device=env.device)
        outcomes: torch.Tensor | None = None  # set once the env reports outcomes
        recurrent = bool(getattr(self.policy, "recurrent", False))
        if recurrent:  # each copy's state, zeroed where an episode starts
            state = self.policy.initial_state(env.num_envs, env.device)
            starts = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        for step in range(self.max_steps):
            if recurrent:
                action, state = self.policy.step(obs, state, starts)
                obs, _, terminated, truncated, info = env.step(action)
                starts = terminated | truncated
            else:
                obs, _, _, _, info = env.step(self.policy.forward(obs))
            episode = info["episode"]
            first = episode["mask"] & ~finished
            returns = torch.where(first, episode["return"], returns)
            lengths = torch.where(first, episode["length"].float(), lengths)
            if "outcome" in episode:
                before = returns.new_zeros(()) if outcomes is None else outcomes
                outcomes = torch.where(first, episode["outcome"], before)
            finished |= episode["mask"]
            # Checking on the host costs a sync; every 8 steps is plenty.
            if step % 8 == 7 and bool(finished.all()):
                break
        done = finished.cpu()
        values = returns.cpu()[done]
        n = int(done.sum())
        mean = float(values.mean()) if n else math.nan
        std = float(values.std(unbiased=False)) if n else math.nan
        solved = n == env.num_envs and self.stop_value is not None and mean >= self.stop_value
        counts = None if outcomes is None else count_outcomes(outcomes.cpu()[done])
        return EvalResult(
            return_mean=mean,
            return_std=std,
            length_mean=float(lengths.cpu()[done].mean()) if n else math.nan,
            n_episodes=n,
            solved=solved,
            wins=None if counts is None else counts.wins,
            losses=None if counts is None else counts.losses,
            draws=None if counts is None else counts.draws,
        )
