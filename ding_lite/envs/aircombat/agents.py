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
from ding_lite.utils.registry import Registry, RegistryError

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

    # The threshold tests, all on normalized observation columns and made in one op:
    # |obs[:, col]| * sign < bound. Signs of -1 turn "more than" tests into "less than".
    _TESTS = (  # (column, sign, bound)
        (4, -1.0, 0.0),  # a missile left
        (9, -1.0, -0.5),  # the enemy is alive
        (6, 1.0, FIRE_RANGE / P.DISTANCE_SCALE),
        (7, 1.0, FIRE_ANGLE / math.pi),  # |bearing|
        (6, 1.0, DEFEND_RANGE / P.DISTANCE_SCALE),
        (6, 1.0, DEFEND_EXIT_RANGE / P.DISTANCE_SCALE),
    )

    def __init__(self, *, num_envs: int, device: str | torch.device = "cpu", seed: int = 0):
        super().__init__(num_envs=num_envs, device=device, seed=seed)
        self.mode = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        self.hold = torch.zeros(num_envs, device=self.device)
        self._make_constants()

    def _make_constants(self) -> None:
        """Tensors of the constants ``act`` uses, on the agent's device (a Python scalar
        operand is converted to a tensor on every call, as costly as a small op)."""
        columns, signs, bounds = zip(*self._TESTS, strict=True)
        dev = self.device
        self._columns = torch.tensor(columns, device=dev)
        self._signs = torch.tensor(signs, device=dev)[:, None]
        self._bounds = torch.tensor(bounds, device=dev)[:, None]
        per_rudder = 1.0 / (P.TURN_RATE * P.DT)  # rudder per radian of heading error
        self._const = {
            key: torch.tensor(value, device=dev)
            for key, value in {
                "crank": CRANK_ANGLE,
                "drag_minus_crank": DRAG_ANGLE - CRANK_ANGLE,
                "bearing_rudder": math.pi * per_rudder,
                "minus_per_rudder": -per_rudder,
                "distance_scale": P.DISTANCE_SCALE,
                "missile_speed": P.MISSILE_SPEED,
                "minus_max_speed": -P.MAX_SPEED,
                "dt": P.DT,
                "zero": 0.0,
                "defend": float(DEFEND),
            }.items()
        }

    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        # Flags are float32 1.0 / 0.0, see :mod:`.flags`.
        c = self._const
        # [tests, N]: each test's flags contiguous.
        tests = obs.T.index_select(0, self._columns).abs_().mul_(self._signs)
        has_missile, enemy_alive, in_range, on_nose, close, near = flag(
            torch.lt, tests, self._bounds
        )
        ready = flag(torch.le, self.hold, c["zero"]) * has_missile * enemy_alive
        fire_ok = ready * in_range * on_nose
        was_defending = flag(torch.eq, self.mode, c["defend"])
        threat = torch.maximum(close, was_defending * near)  # leave Defend only beyond "near"
        away = c["crank"]
        if inbound is not None:
            inbound = inbound.float()
            threat = torch.maximum(threat, inbound)
            fire_ok = fire_ok - fire_ok * inbound
            away = torch.addcmul(away, inbound, c["drag_minus_crank"])
        defend = threat - threat * fire_ok
        # Desired enemy bearing: 0 (nose on) except in Defend, where it sits on the side the
        # enemy already is, at the crank angle, or behind when a missile is inbound.
        bearing = obs[:, 7]  # / pi
        target = torch.copysign(defend * away, bearing)
        # Turning by (bearing - target) brings the enemy to ``target`` off the nose.
        rudder = torch.addcmul(bearing * c["bearing_rudder"], target, c["minus_per_rudder"])
        rudder = rudder.clamp(-1.0, 1.0)
        # Hold fire while the missile flies (its estimated flight time), at least the cooldown.
        closing = torch.addcmul(c["missile_speed"], obs[:, 8], c["minus_max_speed"])
        flight = (obs[:, 6] * c["distance_scale"] / closing).clamp(
            FIRE_COOLDOWN, P.MISSILE_FLIGHT_TIME
        )
        self.hold = torch.lerp(self.hold - c["dt"], flight, fire_ok).clamp(min=0.0)
        self.mode = torch.add(fire_ok, defend, alpha=DEFEND).long()  # FIRE == 1
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire_ok}

    def reset(self, env_mask: Tensor | None = None) -> None:
        if env_mask is None:
            self.mode.zero_()
            self.hold.zero_()
        else:  # in place: act() made them new tensors
            self.mode.masked_fill_(env_mask, APPROACH)
            self.hold.masked_fill_(env_mask, 0.0)

    def to(self, device: str | torch.device) -> Agent:
        super().to(device)
        self.mode, self.hold = self.mode.to(self.device), self.hold.to(self.device)
        self._make_constants()
        return self

    def state_dict(self) -> dict[str, Any]:
        return {"mode": self.mode.clone(), "hold": self.hold.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mode = state["mode"].to(self.device).clone()
        self.hold = state["hold"].to(self.device).clone()


AgentFactory = Callable[..., Agent]

#: ``opponent=self``: the env's second agent, flown by the policy being trained (self-play).
#: Not an agent the registry builds, so the name is reserved.
SELF_PLAY = "self"


def _not_self_play(name: str) -> None:
    if name == SELF_PLAY:
        raise RegistryError(
            f"agent name '{SELF_PLAY}' is reserved for self-play (opponent={SELF_PLAY}); "
            "pick another name"
        )


#: Agent name -> the class (or factory) :func:`create_agent` builds (``opponent=name``).
AGENT_REGISTRY: Registry[AgentFactory] = Registry(
    "agent", extra_known=(SELF_PLAY,), check_name=_not_self_play
)
AGENT_REGISTRY.register("rule_based", CrankAgent)
AGENT_REGISTRY.register("placeholder", PlaceholderAgent)
AGENT_REGISTRY.register("random", RandomAgent)
# Registered by the layer that may load policies; named here only for the error message.
_REGISTERED_ELSEWHERE = {"ppo": "ding_lite.entry.trained"}


def register_agent(name: str, factory: AgentFactory | None = None, *, force: bool = False) -> Any:
    """Makes ``create_agent(name, ...)`` (and ``opponent=name``) build ``factory``; without
    ``factory``, a class decorator.

    Raises:
        RegistryError: ``name`` is taken and ``force`` is false.
    """
    return AGENT_REGISTRY.register(name, factory, force=force)


def create_agent(
    name: str, *, num_envs: int, device: str | torch.device = "cpu", seed: int = 0, **kwargs
) -> Agent:
    """Builds the agent registered as ``name`` for ``num_envs`` env copies.

    ``kwargs`` go to the agent, e.g. ``fire_prob`` for ``"random"``, or ``ckpt`` (required),
    ``config`` and ``deterministic`` for ``"ppo"``
    (:class:`ding_lite.entry.trained.ppo_agent.PPOAgent`, registered when the
    ``ding_lite.entry.trained`` package is imported: envs import no policy code).

    Raises:
        RegistryError: Unknown name (a ``ValueError`` and a ``KeyError``); the message lists
            the known ones. ``"self"`` (self-play) is no agent: the env flies P2 itself.
    """
    if name == SELF_PLAY:
        raise RegistryError(
            f"'{SELF_PLAY}' is self-play, not an agent: build the env with "
            f"opponent='{SELF_PLAY}' and the policy flies both fighters"
        )
    if name not in AGENT_REGISTRY and name in _REGISTERED_ELSEWHERE:
        raise RegistryError(
            f"agent '{name}' is registered when {_REGISTERED_ELSEWHERE[name]} is imported "
            "(the pipelines and the ding-lite command import it); import it first"
        )
    return AGENT_REGISTRY.get(name)(num_envs=num_envs, device=device, seed=seed, **kwargs)
