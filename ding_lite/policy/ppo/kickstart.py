"""Kickstarting (Schmitt et al., 2018; Metta's kickstarter): a trained teacher's pull on the
student, a loss term whose weight decays to nothing.

Each minibatch adds ``coef * f * KL(teacher || student)`` of the action distributions on the
minibatch's observations, and with ``value_coef`` also ``value_coef * f * 0.5 * (v -
v_teacher) ** 2``, where ``f`` falls linearly from 1 to 0 over ``decay_iters`` iterations (0:
it stays 1). Once ``f`` is 0 the teacher is no longer run. The teacher is a trained ding_lite
policy of the same observation and action spaces (``policy.learn.kickstart.teacher``: a run
dir or checkpoint file); it is loaded by the learner (``ding_lite.worker.learner.
saved_policy.load_teacher``) and attached with :meth:`PPOPolicy.set_teacher`.

A scripted teacher (``teacher=agent:NAME``, :mod:`ding_lite.envs.teachers`) has actions but
no distribution: the collectors record what it would do at every step (``teacher_action``)
and the action term is the student's negative log-likelihood of those actions, ``-log
pi(a_teacher | s)`` (behaviour cloning, with the same weight and decay); it has no value
term.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from ding_lite.model import ActorCritic
from ding_lite.model.normalizer import NORM_EPS, RunningNorm


class Kickstart:
    """The teacher and its coefficients (``policy.learn.kickstart``).

    Args:
        teacher: The teacher's actor-critic (feed-forward), frozen; None for a scripted
            teacher, whose actions come with the minibatch.
        settings: ``policy.learn.kickstart``: ``coef``, ``value_coef``, ``decay_iters``.
    """

    def __init__(self, teacher: ActorCritic | None, settings: Mapping[str, Any]) -> None:
        self.teacher = None if teacher is None else teacher.eval().requires_grad_(False)
        self.coef = float(settings["coef"])
        self.value_coef = float(settings["value_coef"])
        self.decay_iters = int(settings["decay_iters"])

    def factor(self, iteration: int) -> float:
        """``f`` at an iteration: 1 falling linearly to 0 over ``decay_iters`` (0: always 1)."""
        if self.decay_iters <= 0:
            return 1.0
        return max(0.0, 1.0 - iteration / self.decay_iters)

    @torch.no_grad()
    def targets(self, obs: Tensor, student_obs_rms: RunningNorm | None) -> tuple[Any, Tensor]:
        """The teacher's action distribution and values on a minibatch's observations.

        The student's rollouts hold observations normalized with its own statistics (with
        ``obs_norm``); they are mapped back with its current statistics (exact but for
        values its ``obs_clip`` cut), then normalized with the teacher's.
        """
        assert self.teacher is not None  # a scripted teacher has no distribution
        raw = obs if student_obs_rms is None else _denormalize(student_obs_rms, obs)
        dist, value = self.teacher(self.teacher.normalize_obs(raw))
        return dist, value


def _denormalize(rms: RunningNorm, x: Tensor) -> Tensor:
    """The inverse of ``rms.normalize`` (before its clip)."""
    std = torch.sqrt(rms.var + NORM_EPS).to(x.dtype)
    return x * std + rms.mean.to(x.dtype)


def kickstart_losses(
    kickstart: Kickstart,
    obs: Tensor,
    dist: Any,
    value: Tensor,
    student_obs_rms: RunningNorm | None,
    weight: Tensor | None,
    teacher_action: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The action term ``KL(teacher || student)`` and the value term ``0.5 * (v -
    v_teacher) ** 2``, means over the minibatch (weighted by a per-sequence
    ``loss_agg_mode``'s ``weight``), each with the student's gradient. A scripted teacher's
    action term is ``-log pi(teacher_action | s)`` and its value term 0."""
    if kickstart.teacher is None:
        if teacher_action is None:
            raise ValueError("a scripted teacher's minibatch holds no teacher_action")
        action = -dist.log_prob(teacher_action)
        v = torch.zeros_like(value)
    else:
        t_dist, t_value = kickstart.targets(obs, student_obs_rms)
        action = t_dist.kl(dist)
        v = 0.5 * (value - t_value).square()
    if weight is None:
        return action.mean(), v.mean()
    return (action * weight).mean(), (v * weight).mean()
