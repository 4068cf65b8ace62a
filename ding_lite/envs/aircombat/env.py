"""Two aircraft with homing missiles in a 2D arena; P1 is the caller, P2 an internal agent.

Every copy is stepped with elementwise ops on ``[N, 2]`` (per aircraft) and ``[N, 2, M]``
(per missile slot) tensors; constants and units are in :mod:`.physics`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.agents import Agent, create_agent
from ding_lite.envs.autoreset import ResetPool
from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.spaces import Box, Hybrid

OBS_DIM = 10
if P.MISSILES not in (1, 2, 4, 8):
    raise ValueError(f"MISSILES must be 1, 2, 4 or 8 (one integer per slot row), got {P.MISSILES}")
_SLOT_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[P.MISSILES]
_STATE_KEYS = (
    "x", "y", "heading", "speed", "alive", "stock", "cooldown", "fired",
    "m_x", "m_y", "m_cx", "m_cy", "m_fuel", "m_active", "m_seen",
)  # fmt: skip


def _any_slot(flags: Tensor) -> Tensor:
    """``flags.any(-1)`` for bool ``[N, 2, MISSILES]``: the slots read as one integer.

    A reduction over a short last dim runs a slow strided kernel on CPU.
    """
    return flags.view(_SLOT_INT).squeeze(-1) != 0


_SWAP_INDEX: dict[torch.device, Tensor] = {}


def _swap(pair: Tensor) -> Tensor:
    """Swaps the two aircraft of ``[N, 2, ...]`` (P1's view of P2 and back).

    ``index_select`` with a cached index is cheaper than ``flip`` on CPU.
    """
    index = _SWAP_INDEX.get(pair.device)
    if index is None:
        index = _SWAP_INDEX[pair.device] = torch.tensor([1, 0], device=pair.device)
    return pair.index_select(1, index)


def _wrap(angle: Tensor) -> Tensor:
    """Wraps radians to ``[-pi, pi)``."""
    return torch.remainder(angle + math.pi, 2.0 * math.pi) - math.pi


class AirCombatEnv(TensorVectorEnv):
    """One-on-one air combat: P1 (the caller) against P2 (an agent run inside the env).

    Observation float32 ``[N, 10]`` for P1, normalized: own x, own y (``/ ARENA_HALF``), own
    heading (``/ pi``), own speed (``/ MAX_SPEED``), own missiles left (``/ MISSILES``), own
    alive, enemy distance (``/`` arena diagonal), enemy bearing relative to own heading
    (``/ pi``, in ``[-1, 1]``), enemy speed (``/ MAX_SPEED``), enemy alive.

    Action ``Hybrid(Box((-1, 0), (1, 1)), (2,))``, i.e. ``[rudder, throttle, fire]`` as an
    ``[N, 3]`` tensor, or a dict of ``[N]`` tensors with those keys; with a fixed
    ``throttle``, ``Hybrid(Box((-1,), (1,)), (2,))``, i.e. ``[rudder, fire]``. Rudder scales
    the turn rate, throttle sets the target speed, fire >= 0.5 launches a missile if one is
    left and the launcher has cooled down.

    Episodes terminate when an aircraft is destroyed or when both are out of missiles with
    none in flight, and are truncated at ``max_episode_steps``. P1's reward is the outcome
    (+1 win, -1 loss, 0 draw, both destroyed included) plus, with ``reward="shaped"``,
    ``SURVIVAL_REWARD`` per step alive and ``-WASTED_MISSILE_PENALTY`` per P1 missile lost
    without a hit.

    ``info["combat"]`` reports finished episodes like ``info["episode"]``: ``outcome``
    float32 ``[N]`` (P1's view), ``length`` int64 ``[N]``, ``missiles_fired`` int64
    ``[N, 2]`` (P1, P2) and ``mask``.

    Attributes:
        opponent: The agent flying P2.
    """

    name = "aircombat"

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        opponent: str | Agent = "rule_based",
        reward: str = "shaped",
        max_episode_steps: int | None = P.MAX_EPISODE_STEPS,
        throttle: float | None = None,
        opponent_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Builds ``num_envs`` copies; call :meth:`reset` before stepping.

        Args:
            num_envs: Number of copies ``N``.
            device: Device of all tensors.
            seed: Seed of the first :meth:`reset` called without one (the opponent's too).
            opponent: Registry name of P2's agent (``"rule_based"``, ``"placeholder"``,
                ``"random"``) or an agent built for ``num_envs`` copies.
            reward: ``"shaped"`` adds the survival and wasted-missile terms to the outcome;
                ``"zero"`` leaves the outcome alone.
            max_episode_steps: Time limit in steps (``DT`` seconds each); a draw.
            throttle: Fixes P1's throttle at this value in ``[0, 1]``; the action is then
                ``[rudder, fire]`` (``[N, 2]``; a dict may leave out ``"throttle"``). None:
                P1 sets it.
            opponent_kwargs: Keyword arguments for the agent ``opponent`` names (e.g.
                ``{"ckpt": PATH}`` for ``"ppo"``); unused when ``opponent`` is an agent.
        """
        if reward not in ("shaped", "zero"):
            raise ValueError(f"reward must be 'shaped' or 'zero', got {reward!r}")
        if throttle is not None and not 0.0 <= float(throttle) <= 1.0:
            raise ValueError(f"throttle must be in [0, 1] or None, got {throttle!r}")
        self.throttle = None if throttle is None else float(throttle)
        low, high = ((-1.0,), (1.0,)) if throttle is not None else ((-1.0, 0.0), (1.0, 1.0))
        super().__init__(
            num_envs=num_envs,
            obs_shape=(OBS_DIM,),
            action_space=Hybrid(continuous=Box(low, high), discrete=(2,)),
            max_episode_steps=max_episode_steps,
            device=device,
            seed=seed,
        )
        self.shaped = reward == "shaped"
        if isinstance(opponent, str):
            opponent = create_agent(
                opponent,
                num_envs=num_envs,
                device=self.device,
                seed=(seed or 0) + 1,
                **(opponent_kwargs or {}),
            )
        self.opponent = opponent
        n, m, dev = num_envs, P.MISSILES, self.device
        # Aircraft fields are [N, aircraft] (P1, P2); missile fields [N, shooter, slot].
        self.x = torch.zeros(n, 2, device=dev)
        self.y = torch.zeros(n, 2, device=dev)
        self.heading = torch.zeros(n, 2, device=dev)
        self.speed = torch.zeros(n, 2, device=dev)
        self.alive = torch.ones(n, 2, dtype=torch.bool, device=dev)
        self.stock = torch.zeros(n, 2, device=dev)  # missiles left, as float
        self.cooldown = torch.zeros(n, 2, device=dev)
        self.fired = torch.zeros(n, 2, dtype=torch.int64, device=dev)
        self.m_x = torch.zeros(n, 2, m, device=dev)
        self.m_y = torch.zeros(n, 2, m, device=dev)
        self.m_cx = torch.ones(n, 2, m, device=dev)  # unit direction of flight
        self.m_cy = torch.zeros(n, 2, m, device=dev)
        self.m_fuel = torch.zeros(n, 2, m, device=dev)
        self.m_active = torch.zeros(n, 2, m, dtype=torch.bool, device=dev)
        self.m_seen = torch.zeros(n, 2, m, dtype=torch.bool, device=dev)  # within MAW_RANGE
        self._slots = torch.arange(m, device=dev)
        # Episodes last well over 8 steps, so every reset gets a draw no earlier one used.
        self._pool = ResetPool(
            num_envs=n, low=(0.0,) * 6, high=(1.0,) * 6, generator=self.generator, device=dev
        )
        self._sides = torch.tensor([-1.0, 1.0], device=dev)  # P1, P2 on either side of the centre
        self._turn_cos = torch.tensor(math.cos(P.MISSILE_TURN_RATE * P.DT), device=dev)
        self._turn_sin = torch.tensor(math.sin(P.MISSILE_TURN_RATE * P.DT), device=dev)
        self._lock_cos = math.cos(P.LOCK_ANGLE)
        self._p2_obs = torch.zeros(n, OBS_DIM, device=dev)  # P2's obs, for the opponent
        self._outcome = torch.zeros(n, device=dev)  # this step's outcome, before autoreset
        self._fired_final = self.fired

    # ------------------------------------------------------------------ public API
    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        self.opponent.reset()
        return super().reset(seed)

    def step(self, action: Tensor | dict[str, Tensor]) -> StepResult:
        """Same contract as :meth:`TensorVectorEnv.step`; ``action`` may be a dict."""
        if isinstance(action, dict):
            keys = (
                ("rudder", "fire") if self.throttle is not None else ("rudder", "throttle", "fire")
            )
            action = torch.stack([action[key] for key in keys], 1)
        obs, reward, terminated, truncated, info = super().step(action)
        done = info["done"]
        self.opponent.reset(done)
        info["episode"]["outcome"] = self._outcome
        info["combat"] = {
            "outcome": self._outcome,
            "length": info["episode"]["length"],
            "missiles_fired": self._fired_final,
            "mask": done,
        }
        return obs, reward, terminated, truncated, info

    def inbound_missile(self) -> Tensor:
        """bool ``[N, 2]``: aircraft 0 / 1's missile-approach warner sees an enemy missile.

        True when an enemy missile in flight was within ``MAW_RANGE`` at the last step. The
        agent-side helper the :class:`CrankAgent` reads; not part of the observation.
        """
        return _swap(_any_slot(self.m_seen))

    def obs_both(self) -> Tensor:
        """float32 ``[N, 2, 10]``: the last observation of each side (P1, P2)."""
        return torch.stack([self._obs(), self._p2_obs], 1)

    # -------------------------------------------------------------- subclass hooks
    def _reset_state(self, mask: Tensor | None) -> None:
        n = self.num_envs
        # Six U(0, 1) draws per copy from the pool (see ResetPool: refreshed 1/8 per step).
        u = (self._pool.take_all() if mask is None else self._pool.values).T
        cx = (u[0] * 2.0 - 1.0) * P.START_CENTRE_SPREAD
        cy = (u[1] * 2.0 - 1.0) * P.START_CENTRE_SPREAD
        half = 0.5 * (
            P.START_MIN_SEPARATION + u[2] * (P.START_MAX_SEPARATION - P.START_MIN_SEPARATION)
        )
        axis = u[3] * (2.0 * math.pi)
        hx, hy = torch.cos(axis) * half, torch.sin(axis) * half
        # Random fields get fresh draws, the rest constants; missile slots only need their
        # active flag cleared (an inactive slot's other fields are never read).
        drawn = {
            "x": torch.addcmul(cx[:, None], hx[:, None], self._sides),
            "y": torch.addcmul(cy[:, None], hy[:, None], self._sides),
            "heading": (u[4:6].T * 2.0 - 1.0) * math.pi,
        }
        constant = {
            "speed": P.START_SPEED,
            "alive": True,
            "stock": float(P.MISSILES),
            "cooldown": 0.0,
            "fired": 0,
            "m_active": False,
            "m_seen": False,
        }
        if mask is None:
            for key, value in drawn.items():
                setattr(self, key, value)
            for key, value in constant.items():
                getattr(self, key).fill_(value)
            return
        # Masks built contiguous once: broadcasting a mask along a short dim is slow on CPU.
        self._pool.advance()
        pair = mask[:, None].expand(n, 2).contiguous()
        for key, value in drawn.items():  # a loop over state fields, not over copies
            setattr(self, key, torch.where(pair, value, getattr(self, key)))
        for key, value in constant.items():
            old = getattr(self, key)
            cond = pair if old.dim() == 2 else pair[:, :, None].expand_as(old)
            setattr(self, key, old.masked_fill(cond, value))

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        opp = self.opponent.act(self._p2_obs, inbound=self.inbound_missile()[:, 1])
        rudder = torch.stack([action[:, 0], opp["rudder"]], 1).clamp(-1.0, 1.0)
        if self.throttle is None:
            p1_throttle = action[:, 1]
        else:
            p1_throttle = torch.full_like(action[:, 0], self.throttle)
        throttle = torch.stack([p1_throttle, opp["throttle"]], 1).clamp(0.0, 1.0)
        trigger = torch.stack([action[:, -1], opp["fire"]], 1) >= 0.5
        alive = self.alive
        alive_f = alive.float()

        # Aircraft: turn, change speed toward the throttle's target, move, stay in the arena.
        heading = _wrap(self.heading + rudder * (P.TURN_RATE * P.DT) * alive_f)
        target_speed = P.MIN_SPEED + throttle * (P.MAX_SPEED - P.MIN_SPEED)
        dv = (target_speed - self.speed).clamp(-P.ACCEL * P.DT, P.ACCEL * P.DT)
        speed = self.speed + dv
        step_len = speed * P.DT * alive_f
        cos, sin = torch.cos(heading), torch.sin(heading)
        old_x, old_y = self.x, self.y
        x = torch.addcmul(old_x, cos, step_len).clamp(-P.ARENA_HALF, P.ARENA_HALF)
        y = torch.addcmul(old_y, sin, step_len).clamp(-P.ARENA_HALF, P.ARENA_HALF)

        # Missiles (slot fields [N, shooter, slot]) chase the enemy's new position: the nose
        # points at it if that is within one step's turn, else turns by the most it can.
        # Directions are unit vectors, which avoids trigonometry on the largest tensors.
        tx, ty = _swap(x)[:, :, None], _swap(y)[:, :, None]
        mx, my, mcx, mcy = self.m_x, self.m_y, self.m_cx, self.m_cy
        dx, dy = tx - mx, ty - my
        d2 = dx * dx + dy * dy
        inv = torch.rsqrt(d2.clamp(min=1.0))
        ux, uy = dx * inv, dy * inv
        dot = mcx * ux + mcy * uy
        side = torch.where(mcx * uy - mcy * ux >= 0, self._turn_sin, -self._turn_sin)
        within = dot >= self._turn_cos
        ncx = torch.where(within, ux, mcx * self._turn_cos - mcy * side)
        ncy = torch.where(within, uy, mcy * self._turn_cos + mcx * side)
        nx = mx + ncx * (P.MISSILE_SPEED * P.DT)
        ny = my + ncy * (P.MISSILE_SPEED * P.DT)
        # Closest approach during the step, both moving linearly: rel(t) = r0 + t (r1 - r0).
        r0x = mx - _swap(old_x)[:, :, None]
        r0y = my - _swap(old_y)[:, :, None]
        drx, dry = (nx - tx) - r0x, (ny - ty) - r0y
        t = (-(r0x * drx + r0y * dry) / (drx * drx + dry * dry).clamp(min=1e-6)).clamp(0, 1)
        cx, cy = r0x + drx * t, r0y + dry * t
        active = self.m_active
        target_alive = _swap(alive)[:, :, None]
        hit = active & target_alive & (cx * cx + cy * cy < P.KILL_RADIUS**2)
        m_fuel = self.m_fuel - P.DT
        inside = (nx.abs() <= P.ARENA_HALF) & (ny.abs() <= P.ARENA_HALF)
        m_active = active & ~hit & (m_fuel > 0) & inside
        wasted = (active[:, 0] & ~m_active[:, 0] & ~hit[:, 0]).sum(-1)  # P1 only

        self.m_seen = m_active & (d2 < P.MAW_RANGE**2)

        # Launch: slot k holds the k-th missile, so the free slot is MISSILES - stock. Without
        # a lock (enemy more than LOCK_ANGLE off the nose) the missile is spent for nothing.
        launch = trigger & alive & (self.stock > 0) & (self.cooldown <= 0)
        ex, ey = _swap(x) - x, _swap(y) - y
        lock = cos * ex + sin * ey >= self._lock_cos * torch.sqrt(ex * ex + ey * ey)
        slot = (P.MISSILES - self.stock).long()
        new = (self._slots == slot[..., None]) & (launch & lock)[..., None]  # [N, 2, M]
        self.m_x = torch.where(new, x[..., None], nx)
        self.m_y = torch.where(new, y[..., None], ny)
        self.m_cx = torch.where(new, cos[..., None], ncx)
        self.m_cy = torch.where(new, sin[..., None], ncy)
        self.m_fuel = torch.where(new, P.MISSILE_FLIGHT_TIME, m_fuel)
        m_active = m_active | new
        self.m_active = m_active
        self.stock = self.stock - launch.float()
        self.cooldown = torch.where(launch, P.LAUNCH_COOLDOWN, (self.cooldown - P.DT).clamp(min=0))
        self.fired = self.fired + launch.long()
        wasted = wasted + (launch[:, 0] & ~lock[:, 0]).long()
        self.heading, self.speed, self.x, self.y = heading, speed, x, y

        # Outcome: a side dies when any enemy missile hit it this step.
        alive = alive & ~_swap(_any_slot(hit))
        self.alive = alive
        p1, p2 = alive[:, 0], alive[:, 1]
        dry_out = (self.stock.sum(1) == 0) & (
            m_active.view(-1, 2 * P.MISSILES).view(_SLOT_INT).sum(1) == 0
        )
        terminated = ~p1 | ~p2 | dry_out
        outcome = p1.float() - p2.float()  # +1 win, -1 loss, 0 both alive or both dead
        self._outcome = outcome
        self._fired_final = self.fired
        reward = outcome
        if self.shaped:
            reward = (
                reward + P.SURVIVAL_REWARD * p1.float() - P.WASTED_MISSILE_PENALTY * wasted.float()
            )
        return reward, terminated

    def _obs(self) -> Tensor:
        x, y, heading, speed = self.x, self.y, self.heading, self.speed
        dx, dy = x[:, 1] - x[:, 0], y[:, 1] - y[:, 0]
        dist = torch.sqrt(dx * dx + dy * dy) * (1.0 / P.DISTANCE_SCALE)
        line = torch.atan2(dy, dx)  # direction from P1 to P2; P2 sees P1 at line + pi
        own_xy = (x * (1.0 / P.ARENA_HALF), y * (1.0 / P.ARENA_HALF))
        own = (*own_xy, heading * (1.0 / math.pi), speed * (1.0 / P.MAX_SPEED))
        stock = self.stock * (1.0 / P.MISSILES)
        alive = self.alive.float()
        bearing = (
            _wrap(line - heading[:, 0]) * (1.0 / math.pi),
            _wrap(line + (math.pi - heading[:, 1])) * (1.0 / math.pi),
        )
        sides = []
        for me in (0, 1):  # a loop over the two sides, each stacked [N, 10] in one op
            enemy = 1 - me
            columns = [f[:, me] for f in own] + [stock[:, me], alive[:, me], dist, bearing[me]]
            columns += [own[3][:, enemy], alive[:, enemy]]
            sides.append(torch.stack(columns, 1))
        self._p2_obs = sides[1]
        return sides[0]

    # ------------------------------------------------------------------ checkpoints
    def _extra_state(self) -> dict[str, Any]:
        state = {key: getattr(self, key).clone() for key in _STATE_KEYS}
        state["p2_obs"] = self._p2_obs.clone()
        state["opponent"] = self.opponent.state_dict()
        state["pool"] = self._pool.state_dict()
        return state

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        for key in _STATE_KEYS:
            setattr(self, key, state[key].to(self.device).clone())
        self._p2_obs = state["p2_obs"].to(self.device).clone()
        self.opponent.load_state_dict(state["opponent"])
        self._pool.load_state_dict(state["pool"])
