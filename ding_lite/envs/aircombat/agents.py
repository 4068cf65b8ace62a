"""Agents that fly one side of the air-combat env: scripted ones and a registry of them.

Every agent has the same interface: ``act(obs, inbound=None)`` maps the side's ``[N, 10]``
observation to ``{"rudder", "throttle", "fire"}`` (``[N]`` float each), ``reset(env_mask)``
clears per-copy memory of finished episodes, and ``train()``, ``eval()``, ``to(device)``,
``state_dict()``, ``load_state_dict()`` behave as for a module. ``inbound`` is the optional
agent-side helper flag "an enemy missile is in flight" (bool ``[N]``, from
:meth:`AirCombatEnv.inbound_missile`); the observation does not carry it, and only the
:class:`CrankAgent` reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.flags import flag

Action = dict[str, Tensor]

# Thresholds of the CrankAgent, scaled from the missile's range: the classic script fires
# at 80% of max range and defends inside 18 km of a 40 km missile.
FIRE_RANGE = 0.8 * P.MISSILE_MAX_RANGE
FIRE_ANGLE = math.radians(30.0)
DEFEND_RANGE = 18_000.0 * P.MISSILE_MAX_RANGE / 40_000.0
DEFEND_EXIT_RANGE = 1.2 * DEFEND_RANGE  # hysteresis: leave Defend only beyond this
CRANK_ANGLE = math.radians(60.0)  # enemy held this far off the nose while cranking
DRAG_ANGLE = math.radians(180.0)  # enemy put behind while a missile is inbound
FIRE_COOLDOWN = 10.0  # s; the agent also waits out its own missile's estimated flight

APPROACH, FIRE, DEFEND = 0, 1, 2


class Agent:
    """Base of the scripted agents: per-copy memory lives in tensors on ``device``."""

    def __init__(self, *, num_envs: int, device: str | torch.device = "cpu", seed: int = 0):
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.training = False

    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        """Maps float32 ``[N, 10]`` obs to ``{"rudder", "throttle", "fire"}``, ``[N]`` each."""
        raise NotImplementedError

    def reset(self, env_mask: Tensor | None = None) -> None:
        """Forgets the memory of the copies in ``env_mask`` (bool ``[N]``; None = all)."""

    def train(self) -> Agent:
        self.training = True
        return self

    def eval(self) -> Agent:
        self.training = False
        return self

    def to(self, device: str | torch.device) -> Agent:
        self.device = torch.device(device)
        return self

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class PlaceholderAgent(Agent):
    """Flies straight at half throttle and never fires: a target."""

    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        zeros = torch.zeros(obs.shape[0], device=obs.device)
        return {"rudder": zeros, "throttle": zeros + 0.5, "fire": zeros}


class RandomAgent(Agent):
    """Uniform rudder and throttle; fires with probability ``fire_prob`` per step."""

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int = 0,
        fire_prob: float = 0.05,
    ):
        super().__init__(num_envs=num_envs, device=device, seed=seed)
        self.fire_prob = fire_prob
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)

    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        u = torch.rand(3, obs.shape[0], device=obs.device, generator=self.generator)
        return {
            "rudder": u[0] * 2.0 - 1.0,
            "throttle": u[1],
            "fire": (u[2] < self.fire_prob).float(),
        }

    def to(self, device: str | torch.device) -> Agent:
        if torch.device(device) != self.device:
            super().to(device)
            self.generator = torch.Generator(device=self.device)
        return self

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"].cpu())


class CrankAgent(Agent):
    """Scripted fighter: a three-state machine per env copy, stepped with tensor ops.

    - Approach: turn toward the enemy at full throttle.
    - Fire: the enemy is within ``FIRE_RANGE`` (80% of the missile's range), less than 30
      degrees off the nose and the agent is ready (a missile left, 10 s since the last launch
      and its last missile's estimated flight over: one missile at a time); launches.
    - Defend: a missile is inbound (drag: turn the enemy behind) or the enemy is closer than
      ``DEFEND_RANGE`` (crank: hold it 60 degrees off the nose). Left only beyond
      ``DEFEND_EXIT_RANGE`` with nothing inbound.

    Attributes:
        mode: int64 ``[N]``, the state after the last :meth:`act` (APPROACH, FIRE, DEFEND).
        hold: float32 ``[N]``, seconds until the agent may launch again.
    """

    def __init__(self, *, num_envs: int, device: str | torch.device = "cpu", seed: int = 0):
        super().__init__(num_envs=num_envs, device=device, seed=seed)
        self.mode = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        self.hold = torch.zeros(num_envs, device=self.device)

    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        # Flags are float32 1.0 / 0.0, see :mod:`.flags`.
        dist, bearing = obs[:, 6] * P.DISTANCE_SCALE, obs[:, 7] * math.pi
        enemy_speed = obs[:, 8] * P.MAX_SPEED
        ready = flag(torch.le, self.hold, 0.0) * flag(torch.gt, obs[:, 4], 0.0)
        ready = ready * flag(torch.gt, obs[:, 9], 0.5)
        in_reach = flag(torch.lt, dist, FIRE_RANGE) * flag(torch.lt, bearing.abs(), FIRE_ANGLE)
        fire_ok = ready * in_reach
        was_defending = flag(torch.eq, self.mode, DEFEND)
        close = torch.maximum(
            flag(torch.lt, dist, DEFEND_RANGE),
            was_defending * flag(torch.lt, dist, DEFEND_EXIT_RANGE),
        )
        if inbound is None:
            threat, away = close, CRANK_ANGLE
        else:
            inbound = inbound.float()
            threat = torch.maximum(close, inbound)
            fire_ok = fire_ok - fire_ok * inbound
            away = inbound * (DRAG_ANGLE - CRANK_ANGLE) + CRANK_ANGLE
        defend = threat - threat * fire_ok
        # Desired enemy bearing: 0 (nose on) except in Defend, where it sits on the side the
        # enemy already is, at the crank angle, or behind when a missile is inbound.
        target = torch.copysign(defend * away, bearing)
        # Turning by (bearing - target) brings the enemy to ``target`` off the nose.
        rudder = ((bearing - target) * (1.0 / (P.TURN_RATE * P.DT))).clamp(-1.0, 1.0)
        flight = dist / (P.MISSILE_SPEED - enemy_speed)  # the missile's estimated flight
        flight = flight.clamp(FIRE_COOLDOWN, P.MISSILE_FLIGHT_TIME)
        self.hold = torch.lerp(self.hold - P.DT, flight, fire_ok).clamp(min=0.0)
        self.mode = (fire_ok * FIRE + defend * DEFEND).long()
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire_ok}

    def reset(self, env_mask: Tensor | None = None) -> None:
        if env_mask is None:
            self.mode.zero_()
            self.hold.zero_()
        else:
            self.mode = torch.where(env_mask, APPROACH, self.mode)
            self.hold = torch.where(env_mask, 0.0, self.hold)

    def to(self, device: str | torch.device) -> Agent:
        super().to(device)
        self.mode, self.hold = self.mode.to(self.device), self.hold.to(self.device)
        return self

    def state_dict(self) -> dict[str, Any]:
        return {"mode": self.mode.clone(), "hold": self.hold.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mode = state["mode"].to(self.device).clone()
        self.hold = state["hold"].to(self.device).clone()


def _ppo_agent(**kwargs: Any) -> Agent:
    """Builds a :class:`ding_lite.entry.ppo_agent.PPOAgent`, imported on first use.

    It loads policy checkpoints, which is entry-level work: envs import no policy code.
    """
    from ding_lite.entry.ppo_agent import PPOAgent

    return PPOAgent(**kwargs)


AgentFactory = Callable[..., Agent]
_AGENTS: dict[str, AgentFactory] = {
    "rule_based": CrankAgent,
    "placeholder": PlaceholderAgent,
    "random": RandomAgent,
    "ppo": _ppo_agent,
}


def register_agent(name: str, factory: AgentFactory) -> None:
    """Makes ``create_agent(name, ...)`` (and ``opponent=name``) build ``factory``."""
    if name in _AGENTS:
        raise ValueError(f"agent '{name}' is already registered")
    _AGENTS[name] = factory


def create_agent(
    name: str, *, num_envs: int, device: str | torch.device = "cpu", seed: int = 0, **kwargs
) -> Agent:
    """Builds the agent registered as ``name`` for ``num_envs`` env copies.

    ``kwargs`` go to the agent, e.g. ``fire_prob`` for ``"random"``, or ``ckpt`` (required),
    ``config`` and ``deterministic`` for ``"ppo"`` (see
    :class:`ding_lite.entry.ppo_agent.PPOAgent`).

    Raises:
        ValueError: Unknown name; the message lists the known ones.
    """
    if name not in _AGENTS:
        raise ValueError(f"unknown agent '{name}'; known: {', '.join(_AGENTS)}")
    return _AGENTS[name](num_envs=num_envs, device=device, seed=seed, **kwargs)
