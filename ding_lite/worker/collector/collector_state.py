"""What a SerialCollector carries between env steps (:class:`Carry`), what it tells of its
recent episodes (:class:`RecentEpisodes`), and its state in a checkpoint: what a resumed
run needs to continue exactly."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ding_lite.utils.stats import count_outcomes


@dataclass
class Carry:
    """What a collector carries from one env step to the next, one row per policy row
    (``num_envs * num_agents``).

    Attributes:
        obs: the current observation (before normalization).
        running_return: each row's running discounted return, for reward scaling (reset
            at episode ends).
        episode: each row's episode number, for an episode-level advantage estimator
            (None: not counted).
        core_state: a recurrent policy's state of each row (None: no memory).
        episode_start: which rows start an episode at the next step (recurrent only).
    """

    obs: Tensor
    running_return: Tensor
    episode: Tensor | None = None
    core_state: Tensor | None = None
    episode_start: Tensor | None = None

    @classmethod
    def start(cls, obs: Tensor, policy: Any, episodes: bool, recurrent: bool, device: Any) -> Carry:
        """The carry after a reset to ``obs`` (``[rows, ...]``) on ``device``, for ``policy``."""
        rows = obs.shape[0]
        carry = cls(obs=obs, running_return=torch.zeros(rows, device=device))
        if episodes:
            carry.episode = torch.zeros(rows, dtype=torch.long, device=device)
        if recurrent:
            carry.core_state = policy.initial_state(rows, device)
            carry.episode_start = torch.ones(rows, dtype=torch.bool, device=device)
        return carry


class RecentEpisodes:
    """The figures of a collector's last finished episodes (its ``recent_returns`` and
    ``recent_outcomes`` windows)."""

    recent_returns: deque[float]
    recent_outcomes: deque[float]

    def mean_recent_return(self, last: int = 20) -> float | None:
        """Mean return of the last ``last`` finished episodes (None before any finished)."""
        if not self.recent_returns:
            return None
        tail = list(self.recent_returns)[-last:]
        return sum(tail) / len(tail)

    def outcome_rates(self) -> dict[str, float] | None:
        """Win, loss and draw rates over ``recent_outcomes`` (the last ``stats_window``
        finished episodes).

        Returns:
            ``{"win_rate", "loss_rate", "draw_rate"}``, or None when the env reports no
            outcomes or no episode has finished yet.
        """
        if not self.recent_outcomes:
            return None
        return count_outcomes(list(self.recent_outcomes)).rates()


def collector_state(c: Any) -> dict[str, Any]:
    """Env state, current observation, counters, statistics windows, random stream and
    (as the collector has them) episode numbers and recurrent state of a collector."""
    return {
        "env": c.env.state_dict(),
        "obs": c.carry.obs.clone(),
        "envstep": c.envstep,
        "episodes": c.episodes,
        "recent_returns": list(c.recent_returns),
        "recent_lengths": list(c.recent_lengths),
        "recent_outcomes": list(c.recent_outcomes),
        "running_return": c.carry.running_return.clone(),
        **({"rng": c.rng.state_dict()} if c.rng is not None else {}),
        **({"episode": c.carry.episode.clone()} if c.carry.episode is not None else {}),
        **({"teacher": c.teacher.teacher.state_dict()} if c.teacher is not None else {}),
        **(
            {
                "core_state": c.carry.core_state.clone(),
                "episode_start": c.carry.episode_start.clone(),
            }
            if c.recurrent
            else {}
        ),
    }


def load_collector_state(c: Any, state: dict[str, Any]) -> None:
    """Restores what :func:`collector_state` returned into collector ``c``.

    Raises:
        ValueError: the state was saved with another ``async_factor``, or holds no
            recurrent state for a recurrent policy.
    """
    saved = len(state["env"].get("groups", [state["env"]]))
    if saved != c.async_factor:
        raise ValueError(
            f"the collector state was saved with collector.async_factor={saved}, this "
            f"collector has {c.async_factor}; resume with the same value"
        )
    c.env.load_state_dict(state["env"])
    c.carry.obs = state["obs"].to(c.env.device)
    c.envstep = int(state["envstep"])
    c.episodes = int(state["episodes"])
    window = c.recent_returns.maxlen
    c.recent_returns = deque(state["recent_returns"], maxlen=window)
    c.recent_lengths = deque(state["recent_lengths"], maxlen=window)
    # Checkpoints written before outcomes were tracked have no such key.
    c.recent_outcomes = deque(state.get("recent_outcomes", ()), maxlen=window)
    if "running_return" in state:  # older checkpoints have none (it was not used)
        c.carry.running_return = state["running_return"].to(c.env.device)
    if c.rng is not None and "rng" in state:  # older checkpoints sampled globally
        c.rng.load_state_dict(state["rng"])
    if c.carry.episode is not None:
        if "episode" not in state:
            raise ValueError(
                "the collector state holds no episode numbers: it was saved for a "
                "step-level advantage estimator; resume with the same estimator"
            )
        c.carry.episode = state["episode"].to(c.env.device)
    if c.teacher is not None and "teacher" in state:
        c.teacher.teacher.load_state_dict(state["teacher"])
    if c.recurrent:
        if "core_state" not in state:
            raise ValueError("the collector state holds no recurrent state for this policy")
        c.carry.core_state = state["core_state"].to(c.env.device)
        c.carry.episode_start = state["episode_start"].to(c.env.device)
