"""Scripted teachers: hand-written controllers of the bundled envs, for kickstarting
(``policy.learn.kickstart.teacher=agent:NAME``).

A scripted teacher acts where the student acts: the collector asks it, at every step, what
it would do on the env's observation (before any normalization) and ships its actions
with the rollout as ``teacher_action``; the update pulls the student toward them
(``ding_lite.policy.ppo.kickstart``). It may keep state per env copy (the air-combat
CrankAgent does), cleared where an episode ends, and read the env beyond the observation
(the CrankAgent's missile warner).

Bundled: ``cartpole``'s ``balance`` (push toward where the pole falls: every episode
lasts 500 steps), ``pendulum``'s ``energy`` (pump energy to the top, then hold it; mean
return about -150), ``aircombat``'s ``rule_based`` (the CrankAgent, flying the student's
fighter). :func:`register_teacher` adds one for any env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import Tensor

from ding_lite.utils.errors import ConfigError


class ScriptedTeacher(Protocol):
    """What the collector asks of a teacher."""

    def act(self, obs: Tensor) -> Tensor:
        """Actions ``[N, *action_shape]`` as the student's policy gives them, for the env's
        observations ``[N, *obs_shape]``."""
        ...

    def reset(self, done: Tensor) -> None:
        """Forgets what it kept for the copies where ``done`` (bool ``[N]``)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What it keeps (saved with the collector, so a resumed run acts alike)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


TeacherFactory = Callable[[Any], ScriptedTeacher]  # env -> teacher
_TEACHERS: dict[str, dict[str, TeacherFactory]] = {}
PREFIX = "agent:"  # policy.learn.kickstart.teacher=agent:NAME


def register_teacher(env_name: str, name: str, factory: TeacherFactory) -> None:
    """Makes ``agent:<name>`` a teacher for the env registered as ``env_name``;
    ``factory(env)`` builds it for one env (its copies, device and state)."""
    _TEACHERS.setdefault(env_name, {})[name] = factory


def teacher_names(env_name: str) -> list[str]:
    return sorted(_TEACHERS.get(env_name, {}))


def scripted_name(teacher: str) -> str | None:
    """``NAME`` of ``agent:NAME``; None for a run dir or checkpoint."""
    return teacher[len(PREFIX) :] if teacher.startswith(PREFIX) else None


def check_teacher(env_name: str, teacher: str) -> None:
    """Refuses ``agent:NAME`` where ``env_name`` has no such teacher (one line)."""
    name = scripted_name(teacher)
    if name is not None and name not in _TEACHERS.get(env_name, {}):
        known = ", ".join(PREFIX + n for n in teacher_names(env_name)) or "none"
        raise ConfigError(
            f"policy.learn.kickstart.teacher={teacher}: env {env_name!r} has no scripted "
            f"teacher {name!r} (its teachers: {known})"
        )


def build_teacher(env_name: str, teacher: str, env: Any) -> ScriptedTeacher:
    """The scripted teacher ``agent:NAME`` for ``env`` (one env of ``env_name``).

    Raises:
        ConfigError: no such teacher for that env, or the env has several agents per copy.
    """
    check_teacher(env_name, teacher)
    if int(getattr(env, "num_agents", 1)) != 1:
        raise ConfigError(
            f"policy.learn.kickstart.teacher={teacher}: a scripted teacher acts for one "
            "agent per env copy; this env has several"
        )
    name = scripted_name(teacher)
    assert name is not None  # checked above
    return _TEACHERS[env_name][name](env)


class _Stateless:
    """A teacher that is a function of the observation alone."""

    def __init__(self, fn: Callable[[Tensor], Tensor]) -> None:
        self.fn = fn

    def act(self, obs: Tensor) -> Tensor:
        return self.fn(obs)

    def reset(self, done: Tensor) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


def _balance(obs: Tensor) -> Tensor:
    """CartPole: push toward where the pole is falling (angle, its rate, a little of the
    cart's position and velocity to stay on the track). 1 pushes right."""
    x, x_dot, theta, theta_dot = obs.unbind(-1)
    return (theta + 0.5 * theta_dot + 0.05 * x + 0.1 * x_dot > 0).long()


def _energy(obs: Tensor) -> Tensor:
    """Pendulum: near the top (within about 23 degrees) a PD hold, elsewhere pump the
    pendulum's energy toward the top's. Its motion is ``theta'' = 15 sin(theta) + 3 u``
    (theta = 0 upright), so ``0.5 theta'^2 + 15 cos(theta)`` is 15 at rest on top and the
    torque changes it at ``3 u theta'``."""
    cos, sin, rate = obs[..., 0], obs[..., 1], obs[..., 2]
    energy = 0.5 * rate * rate + 15.0 * cos
    pump = 2.0 * (15.0 - energy) * rate
    hold = -(10.0 * torch.atan2(sin, cos) + 2.0 * rate)
    return torch.where(cos > 0.92, hold, pump).clamp(-2.0, 2.0).unsqueeze(-1)


class _CrankTeacher:
    """The air-combat CrankAgent flying the student's fighter (P1): its own state per copy,
    and P1's missile warner read from the env."""

    def __init__(self, env: Any) -> None:
        from ding_lite.envs.aircombat.agents import CrankAgent

        self.env = env
        self.agent = CrankAgent(num_envs=env.num_envs, device=env.device)

    def act(self, obs: Tensor) -> Tensor:
        out = self.agent.act(obs, inbound=self.env.inbound_missile()[:, 0])
        columns = [out["rudder"]]
        if self.env.throttle is None:  # the policy flies the throttle too
            columns.append(out["throttle"])
        columns.append(out["fire"])
        return torch.stack(columns, 1).to(obs.dtype)

    def reset(self, done: Tensor) -> None:
        self.agent.reset(done)

    def state_dict(self) -> dict[str, Any]:
        return self.agent.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.agent.load_state_dict(state)


register_teacher("cartpole", "balance", lambda env: _Stateless(_balance))


def _energy_teacher(env: Any) -> ScriptedTeacher:
    if tuple(env.obs_shape) != (3,):
        raise ConfigError(
            "the pendulum's energy teacher reads the angular velocity: it needs "
            "env.kwargs.observe=full"
        )
    return _Stateless(_energy)


register_teacher("pendulum", "energy", _energy_teacher)
register_teacher("aircombat", "rule_based", _CrankTeacher)
