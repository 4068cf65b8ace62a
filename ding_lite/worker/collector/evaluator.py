"""Evaluator: deterministic episodes, one per eval env copy, the stop decision, and (with
``evaluator.video_freq``) a video of copy 0's episode every so many evaluations."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch

from ding_lite.envs.frames import can_render, cannot_render_message, frame_rate
from ding_lite.policy.base import EvalMode
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.stats import count_outcomes
from ding_lite.worker.collector.eval_video import EvalVideo
from ding_lite.worker.collector.video_writer import VideoInfo, VideoWriter


class FrameSink(Protocol):
    """Where :meth:`Evaluator.eval` puts copy 0's frames (a :class:`VideoWriter`)."""

    def append(self, frame: Any) -> None: ...


@dataclass(frozen=True)
class EvalResult:
    """Statistics of one evaluation.

    ``wins``, ``losses`` and ``draws`` count the finished episodes by outcome; they are None
    when the env reports no ``info["episode"]["outcome"]``. With several agents per copy
    (``env.num_agents``) every agent's episode counts as one, with its own return and
    outcome.
    """

    return_mean: float
    return_std: float
    length_mean: float
    n_episodes: int
    solved: bool
    wins: int | None = None
    losses: int | None = None
    draws: int | None = None
    video: VideoInfo | None = None  # the video this evaluation recorded (evaluator.video_freq)

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
        video: records copy 0's episode of every so many evaluations (None: never; then
            evaluating costs nothing extra).

    Raises:
        ConfigError: ``video`` is given but the env cannot draw.
    """

    def __init__(
        self,
        env: Any,
        policy: EvalMode,
        *,
        stop_value: float | None = None,
        seed: int = 0,
        max_steps: int = 100_000,
        video: EvalVideo | None = None,
    ) -> None:
        if video is not None and not can_render(env):
            name = getattr(env, "name", type(env).__name__)
            message = cannot_render_message(env, name)
            raise ConfigError(f"evaluator.video_freq={video.freq}: {message}")
        self.video = video
        self.env = env
        self.policy = policy
        self.stop_value = stop_value
        self.seed = seed
        self.max_steps = max_steps

    def eval(self, *, version: int | None = None, record: FrameSink | None = None) -> EvalResult:
        """Runs one episode per env copy and returns their statistics.

        Sampling eval actions (``policy.eval.deterministic=false``) draws from a forked RNG,
        so evaluating never changes the training run's random stream.

        Args:
            version: the policy version (or iteration) evaluated; it names a video file.
            record: gets copy 0's frames, one per step of its episode (the state each
                action was chosen in; the last state, which autoreset replaces, is not
                drawn). None: the evaluator's own ``video`` decides whether to record.
        """
        if record is None and self.video is not None:
            path = self.video.next_path(version)
            if path is not None:
                with VideoWriter(path, frame_rate(self.env)) as writer:
                    result = self._forked_eval(writer)
                return replace(result, video=writer.info)
        return self._forked_eval(record)

    def _forked_eval(self, record: FrameSink | None) -> EvalResult:
        devices = [self.env.device] if self.env.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(self.seed)
            return self._eval(record)

    def _eval(self, record: FrameSink | None) -> EvalResult:
        env = self.env
        # One row per agent of every copy (A = 1: per copy); per-copy outputs are repeated.
        agents = int(getattr(env, "num_agents", 1))
        rows = env.num_envs * agents

        def per_agent(x: torch.Tensor) -> torch.Tensor:
            return x if agents == 1 else x.flatten(0, 1)

        def repeat(x: torch.Tensor) -> torch.Tensor:
            return x if agents == 1 else x.repeat_interleave(agents, dim=0)

        obs, _ = env.reset(seed=self.seed)
        obs = per_agent(obs)
        finished = torch.zeros(rows, dtype=torch.bool, device=env.device)
        returns = torch.zeros(rows, device=env.device)
        lengths = torch.zeros(rows, device=env.device)
        outcomes: torch.Tensor | None = None  # set once the env reports outcomes
        recurrent = bool(getattr(self.policy, "recurrent", False))
        if recurrent:  # each row's state, zeroed where an episode starts
            state = self.policy.initial_state(rows, env.device)
            starts = torch.ones(rows, dtype=torch.bool, device=env.device)
        for step in range(self.max_steps):
            if record is not None and not bool(finished[0]):  # copy 0's episode goes on
                record.append(env.render())
            if recurrent:
                action, state = self.policy.step(obs, state, starts)
            else:
                action = self.policy.forward(obs)
            if agents > 1:
                action = action.unflatten(0, (-1, agents))
            obs, _, terminated, truncated, info = env.step(action)
            obs = per_agent(obs)
            if recurrent:
                starts = repeat(terminated | truncated)
            episode = info["episode"]
            mask = repeat(episode["mask"])
            first = mask & ~finished
            returns = torch.where(first, per_agent(episode["return"]), returns)
            lengths = torch.where(first, repeat(episode["length"]).float(), lengths)
            if "outcome" in episode:
                before = returns.new_zeros(()) if outcomes is None else outcomes
                outcomes = torch.where(first, per_agent(episode["outcome"]), before)
            finished |= mask
            # Checking on the host costs a sync; every 8 steps is plenty.
            if step % 8 == 7 and bool(finished.all()):
                break
        done = finished.cpu()
        values = returns.cpu()[done]
        n = int(done.sum())
        mean = float(values.mean()) if n else math.nan
        std = float(values.std(unbiased=False)) if n else math.nan
        solved = n == rows and self.stop_value is not None and mean >= self.stop_value
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
