"""The draw reward of the air-combat env: what each side gets when a match ends undecided.

A separate mixin so that the env's own module keeps to the physics and the one-agent
reward; used by both the one-agent env and self-play.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ding_lite.envs.aircombat.fields import MixinBase
from ding_lite.envs.aircombat.flags import flag


class DrawReward(MixinBase):
    """``draw_reward``: added to a side's reward in the step its episode ends in a draw (a
    mixin: it reads the env's outcome and episode lengths)."""

    def _init_draw_reward(self, draw_reward: float) -> None:
        """Checks and keeps ``draw_reward``."""
        if isinstance(draw_reward, bool) or not isinstance(draw_reward, (int, float)):
            raise ValueError(f"draw_reward must be a number, got {draw_reward!r}")
        if not math.isfinite(draw_reward):
            raise ValueError(f"draw_reward must be a finite number, got {draw_reward!r}")
        self.draw_reward = float(draw_reward)

    def _add_draw_reward(self, reward: Tensor, terminated: Tensor) -> Tensor:
        """``reward`` (``[N]``, or ``[N, 2]`` in self-play) plus ``draw_reward`` where the
        episode ends this step (``terminated``, or the time limit reached) with an outcome
        of 0 for that side: both alive, or both destroyed in the same step."""
        if not self.draw_reward:
            return reward
        ends = terminated
        if self.max_episode_steps is not None:
            ends = ends | (self._ep_length + 1 >= self.max_episode_steps)
        if reward.dim() > 1:
            ends = ends[:, None]
        draw = flag(torch.eq, self._outcome, 0.0) * ends
        return reward.add(draw, alpha=self.draw_reward)
