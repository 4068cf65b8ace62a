"""A scripted teacher's actions over a rollout (``policy.learn.kickstart.teacher=agent:NAME``,
see :mod:`ding_lite.envs.teachers`): asked at every step on the env's observation, its
state cleared where episodes end, its actions shipped as the rollout's ``teacher_action``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.teachers import ScriptedTeacher, build_teacher, scripted_name
from ding_lite.utils.errors import ConfigError


class TeacherTrack:
    """Records what ``teacher`` would do at each of a rollout's ``n_steps`` steps."""

    def __init__(self, teacher: ScriptedTeacher, n_steps: int) -> None:
        self.teacher = teacher
        self.n_steps = n_steps
        self.actions: Tensor | None = None  # [T, N, *action_shape]

    def record(self, t: int, obs: Tensor) -> None:
        """Step ``t``'s teacher actions on the env's observations (before normalization)."""
        action = self.teacher.act(obs)
        if self.actions is None:
            self.actions = torch.empty(
                (self.n_steps, *action.shape), dtype=action.dtype, device=action.device
            )
        self.actions[t] = action

    def ended(self, done: Tensor) -> None:
        """Where episodes ended (bool ``[N]``) the teacher starts afresh (masked, so no
        host sync on a GPU)."""
        self.teacher.reset(done)


def teacher_for(cfg: Any, env: Any) -> TeacherTrack | None:
    """The run's scripted teacher on ``env``, if ``policy.learn.kickstart.teacher`` names
    one (``agent:NAME``); else None.

    Raises:
        ConfigError: no such teacher for the env, several agents per copy, or groups of
            env copies stepped in turn (``collector.async_factor`` > 1).
    """
    teacher = cfg.policy.learn.kickstart.teacher
    if not teacher or scripted_name(teacher) is None:
        return None
    if cfg.collector.async_factor > 1:
        raise ConfigError(
            f"policy.learn.kickstart.teacher={teacher} needs collector.async_factor=1 "
            "(a scripted teacher acts on one env)"
        )
    return TeacherTrack(build_teacher(cfg.env.name, teacher, env), cfg.policy.collect.n_steps)
