"""Two aircraft with homing missiles in a 2D arena; P1 is the caller, P2 an internal agent
or, in self-play (``opponent="self"``), the caller too.

Every copy is stepped with elementwise ops on ``[N, 2]`` (per aircraft) and ``[N, 2, M]``
(per missile slot) tensors; constants and units are in :mod:`.physics`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.agents import SELF_PLAY, Agent, create_agent
from ding_lite.envs.aircombat.drawing import Drawing
from ding_lite.envs.aircombat.flags import any_slot, flag
from ding_lite.envs.aircombat.observe import Observation, observe_dim, swap, swap_index, wrap
from ding_lite.envs.aircombat.resets import Resets
from ding_lite.envs.aircombat.rewards import DrawReward
from ding_lite.envs.aircombat.selfplay import SelfPlay
from ding_lite.envs.aircombat.slots import MISSILE_FIELDS, MissileSlots, missile_field
from ding_lite.envs.autoreset import make_reset_source
from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.reset_groups import check_reset_group_size
from ding_lite.envs.spaces import Box, Hybrid

_STATE_KEYS = (
    "x", "y", "heading", "speed", "alive", "stock", "cooldown", "fired", *MISSILE_FIELDS,
)  # fmt: skip


class AirCombatEnv(
    MissileSlots, Observation, Resets, SelfPlay, DrawReward, Drawing, TensorVectorEnv
):
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
    ``survival_reward`` (default ``SURVIVAL_REWARD``) per step alive,
    ``DEFEATED_MISSILE_REWARD`` per P2 missile lost without a hit while P1 is alive (evaded)
    and ``-WASTED_MISSILE_PENALTY`` per P1 missile lost without a hit.

    ``info["combat"]`` reports finished episodes like ``info["episode"]``: ``outcome``
    float32 ``[N]`` (P1's view), ``length`` int64 ``[N]``, ``missiles_fired`` int64
    ``[N, 2]`` (P1, P2) and ``mask``.

    Self-play (``opponent="self"``, see :mod:`.selfplay`): the caller flies both fighters
    as agents 0 (blue, P1) and 1 (red, P2), ``num_agents = 2``: obs ``[N, 2, 10]``, action
    ``[N, 2, 3]``, reward, episode return and outcome ``[N, 2]``, each from that agent's
    side; dones and lengths ``[N]``. Every other opponent keeps ``num_agents = 1``.

    State fields are public tensors: per aircraft ``[N, 2]`` (``x``, ``y``, ``heading``,
    ``speed``, ``stock``, ``cooldown``, ``fired`` int64, ``alive``) and per missile slot
    ``[N, 2, MISSILES]`` (``m_x``, ``m_y``, ``m_cx``, ``m_cy``, ``m_fuel``, ``m_active``,
    ``m_seen``: views of the rows of one ``[7, N, 2, MISSILES]`` block; assigning to one
    copies into its row). The flags ``alive``, ``m_active`` and ``m_seen`` are float32 1.0 /
    0.0 (see :mod:`.flags`). On CPU a step computes only the sparse rows (slots in flight,
    launches, copies that ended) and updates slot fields in place; elsewhere it uses masks.

    Attributes:
        opponent: The agent flying P2; None in self-play.
        self_play: Whether the caller flies both fighters (``opponent="self"``).
    """

    name = "aircombat"
    m_x, m_y = missile_field("m_x"), missile_field("m_y")  # position, m
    m_cx, m_cy = missile_field("m_cx"), missile_field("m_cy")  # unit direction of flight
    m_fuel = missile_field("m_fuel")  # seconds of flight left
    m_active = missile_field("m_active")  # in flight
    m_seen = missile_field("m_seen")  # in flight and within MAW_RANGE

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
        survival_reward: float | None = None,
        reset_group_size: int = 1,
        draw_reward: float = 0.0,
        observe: str = "base",
    ) -> None:
        """Builds ``num_envs`` copies; call :meth:`reset` before stepping.

        Args:
            num_envs: Number of copies ``N``.
            device: Device of all tensors.
            seed: Seed of the first :meth:`reset` called without one (the opponent's too).
            opponent: Registry name of P2's agent (``"rule_based"``, ``"placeholder"``,
                ``"random"``), an agent built for ``num_envs`` copies, or ``"self"``:
                self-play, the caller flies P2 as agent 1 (``num_agents = 2``).
            reward: ``"shaped"`` adds the survival and missile terms to the outcome;
                ``"zero"`` leaves the outcome alone; ``"zero_sum"`` (self-play only) gives
                each agent half the difference between its shaped reward and the other's,
                so the two rewards always sum to 0 and a truce pays nothing.
            max_episode_steps: Time limit in steps (``DT`` seconds each); a draw.
            throttle: Fixes P1's throttle at this value in ``[0, 1]``; the action is then
                ``[rudder, fire]`` (``[N, 2]``; a dict may leave out ``"throttle"``). None:
                P1 sets it.
            opponent_kwargs: Keyword arguments for the agent ``opponent`` names (e.g.
                ``{"ckpt": PATH}`` for ``"ppo"``); unused when ``opponent`` is an agent;
                none allowed in self-play.
            survival_reward: The shaped reward's bonus per step alive (``shaped`` and
                ``zero_sum``); None: ``SURVIVAL_REWARD``. In self-play 0 takes away what a
                truce pays: two copies of one policy that both hold fire then gain nothing
                by it.
            reset_group_size: Copies ``i`` with equal ``i // reset_group_size`` start their
                k-th episodes from the same positions and headings (the opponent's own
                randomness aside); 1: off (see :mod:`ding_lite.envs.reset_groups`).
            draw_reward: Added to each side's reward in the step a match ends in a draw
                (time limit, both out of missiles, or both destroyed at once), with any
                ``reward``; 0: none. Negative, a draw costs both sides: in self-play two
                copies of one policy then gain nothing by both fleeing the fight.
            observe: ``"base"``: the 10 features; ``"missiles"``: 4 more on the missiles in
                flight (:data:`~ding_lite.envs.aircombat.observe.MISSILE_OBS_DIM`);
                ``"stock"``: those and the enemy's missiles left, 15.

        Raises:
            ValueError: an unknown ``reward``, ``"zero_sum"`` without self-play, a
                ``throttle`` outside ``[0, 1]``, ``opponent_kwargs`` with
                ``opponent="self"``, or a ``reset_group_size`` not dividing ``num_envs``.
        """
        if reward not in ("shaped", "zero", "zero_sum"):
            raise ValueError(f"reward must be 'shaped', 'zero' or 'zero_sum', got {reward!r}")
        self.self_play = isinstance(opponent, str) and opponent == SELF_PLAY
        if reward == "zero_sum" and not self.self_play:
            raise ValueError(
                "reward='zero_sum' needs opponent='self' (it weighs one agent's reward "
                "against the other's)"
            )
        if self.self_play and opponent_kwargs:
            raise ValueError(
                f"opponent_kwargs {sorted(opponent_kwargs)} given with opponent='self': "
                "self-play has no opponent agent to configure; drop them"
            )
        if survival_reward is None:
            survival_reward = P.SURVIVAL_REWARD
        if not math.isfinite(float(survival_reward)):
            raise ValueError(f"survival_reward must be a finite number, got {survival_reward!r}")
        self.survival_reward = float(survival_reward)
        if throttle is not None and not 0.0 <= float(throttle) <= 1.0:
            raise ValueError(f"throttle must be in [0, 1] or None, got {throttle!r}")
        self.throttle = None if throttle is None else float(throttle)
        self.reset_group_size = check_reset_group_size(self.name, num_envs, reset_group_size)
        self._init_draw_reward(draw_reward)
        low, high = ((-1.0,), (1.0,)) if throttle is not None else ((-1.0, 0.0), (1.0, 1.0))
        super().__init__(
            num_envs=num_envs,
            obs_shape=(observe_dim(observe),),
            action_space=Hybrid(continuous=Box(low, high), discrete=(2,)),
            max_episode_steps=max_episode_steps,
            device=device,
            seed=seed,
            num_agents=2 if self.self_play else 1,
        )
        self.shaped = reward in ("shaped", "zero_sum")
        self.zero_sum = reward == "zero_sum"
        self.opponent: Agent | None = None
        if isinstance(opponent, Agent):
            self.opponent = None if self.self_play else opponent
        elif not self.self_play:
            self.opponent = create_agent(
                opponent,
                num_envs=num_envs,
                device=self.device,
                seed=(seed or 0) + 1,
                **(opponent_kwargs or {}),
            )
        n, m, dev = num_envs, P.MISSILES, self.device
        # Aircraft fields are [N, aircraft] (P1, P2); missile fields [N, shooter, slot].
        self.x = torch.zeros(n, 2, device=dev)
        self.y = torch.zeros(n, 2, device=dev)
        self.heading = torch.zeros(n, 2, device=dev)
        self.speed = torch.zeros(n, 2, device=dev)
        self.alive = torch.ones(n, 2, device=dev)  # float32 0/1 flags, see .flags
        self.stock = torch.zeros(n, 2, device=dev)  # missiles left, as float
        self.cooldown = torch.zeros(n, 2, device=dev)
        self.fired = torch.zeros(n, 2, dtype=torch.int64, device=dev)
        # The missile slot fields m_x ... m_seen are the rows of one block, so that the CPU
        # path gathers and scatters the slots in flight with one op each.
        self._missiles = torch.zeros(len(MISSILE_FIELDS), n, 2, m, device=dev)
        self.m_cx = 1.0  # a unit direction
        self._slots = torch.arange(m, device=dev, dtype=torch.float32)
        # Fly only the slots in flight (see _fly_compact) where a host sync costs nothing.
        self._compact = self.device.type == "cpu"
        # Episodes last well over 8 steps, so every reset gets a draw no earlier one used.
        self._pool = make_reset_source(
            num_envs=n,
            group_size=reset_group_size,
            low=(0.0,) * 6,
            high=(1.0,) * 6,
            generator=self.generator,
            device=dev,
        )
        self._swap_index = swap_index(dev)
        self._sides = torch.tensor([-1.0, 1.0], device=dev)  # P1, P2 on either side of the centre
        self._lock_cos = math.cos(P.LOCK_ANGLE)
        # 0-dim operands for the [N, 2, M] ops: a Python scalar operand is converted to a
        # tensor on every call, which costs as much as a small op.
        self._const = {
            key: torch.tensor(value, device=dev)
            for key, value in {
                "speed": P.START_SPEED,
                "stock": float(P.MISSILES),
                "fuel": P.MISSILE_FLIGHT_TIME,
                "cooldown": P.LAUNCH_COOLDOWN,
                "turn_cos": math.cos(P.MISSILE_TURN_RATE * P.DT),
                "turn_sin": math.sin(P.MISSILE_TURN_RATE * P.DT),
                "kill_radius2": P.KILL_RADIUS**2,
                "maw_range2": P.MAW_RANGE**2,
                "arena_half": P.ARENA_HALF,
                "dt": P.DT,
                "zero": 0.0,
            }.items()
        }
        self._ones_slots = torch.ones(m, device=dev)  # counts per slot row, see _slot_count
        self._bearing_offset = torch.tensor([0.0, math.pi], device=dev)  # P2 sees P1 at line + pi
        self._obs_scale = torch.tensor(
            [1.0 / P.ARENA_HALF] * 2
            + [1.0 / math.pi, 1.0 / P.MAX_SPEED, 1.0 / P.MISSILES, 1.0]
            + [1.0 / P.DISTANCE_SCALE, 1.0 / math.pi, 1.0 / P.MAX_SPEED, 1.0],
            device=dev,
        )[:, None, None]  # per feature of a [10, K, 2] stack
        self._p2_obs = torch.zeros(n, self.obs_shape[0], device=dev)  # P2's, for the opponent
        # This step's outcome, before autoreset: P1's view [N], or each agent's [N, 2].
        self._outcome = torch.zeros(self.batch_shape, device=dev)
        self._fired_final = self.fired

    # ------------------------------------------------------------------ public API
    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        if self.opponent is not None:
            self.opponent.reset()
        return super().reset(seed)

    def step(self, action: Tensor | dict[str, Tensor]) -> StepResult:
        """Same contract as :meth:`TensorVectorEnv.step`; ``action`` may be a dict of
        ``[N]`` tensors (``[N, 2]`` in self-play)."""
        if isinstance(action, dict):
            keys = (
                ("rudder", "fire") if self.throttle is not None else ("rudder", "throttle", "fire")
            )
            action = torch.stack([action[key] for key in keys], -1)
        obs, reward, terminated, truncated, info = super().step(action)
        done = info["done"]
        if self.opponent is not None:
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
        return swap(any_slot(self.m_seen))

    def obs_both(self) -> Tensor:
        """float32 ``[N, 2, 10]``: the last observation of each side (P1, P2); in self-play
        the env's observation itself."""
        if self.self_play:
            return self._obs()
        return torch.stack([self._obs(), self._p2_obs], 1)

    # -------------------------------------------------------------- subclass hooks
    def _controls(self, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(rudder, throttle, trigger)``, float32 ``[N, aircraft]`` each, from the caller's
        action and (without self-play) the opponent's; trigger is a 0/1 flag."""
        if self.self_play:
            return self._self_play_controls(action)
        assert self.opponent is not None  # only self-play has none
        # P2's warner sees P1's missiles (shooter 0): inbound_missile()[:, 1] without a swap.
        opp = self.opponent.act(self._p2_obs, inbound=any_slot(self.m_seen)[:, 0])
        if self.throttle is None:
            p1_throttle = action[:, 1]
        else:
            p1_throttle = torch.full_like(action[:, 0], self.throttle)
        controls = torch.stack(
            (action[:, 0], opp["rudder"], p1_throttle, opp["throttle"], action[:, -1], opp["fire"]),
            1,
        ).view(-1, 3, 2)  # [N, control, aircraft]
        rudder = controls[:, 0].clamp(-1.0, 1.0)
        throttle = controls[:, 1].clamp(0.0, 1.0)
        return rudder, throttle, flag(torch.ge, controls[:, 2], 0.5)

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        rudder, throttle, trigger = self._controls(action)
        alive = self.alive  # float 0/1 flags from here on (see .flags)

        # Aircraft: turn, change speed toward the throttle's target, move, stay in the arena.
        heading = wrap(torch.addcmul(self.heading, rudder, alive, value=P.TURN_RATE * P.DT))
        target_speed = throttle * (P.MAX_SPEED - P.MIN_SPEED) + P.MIN_SPEED
        dv = (target_speed - self.speed).clamp(-P.ACCEL * P.DT, P.ACCEL * P.DT)
        speed = self.speed + dv
        step_len = speed * alive * P.DT
        cos, sin = torch.cos(heading), torch.sin(heading)
        old_x, old_y = self.x, self.y
        x = torch.addcmul(old_x, cos, step_len).clamp(-P.ARENA_HALF, P.ARENA_HALF)
        y = torch.addcmul(old_y, sin, step_len).clamp(-P.ARENA_HALF, P.ARENA_HALF)
        # Each shooter's target, [5, N, 2]: new x, y, old x, y, alive (one swap for all).
        targets = torch.stack((x, y, old_x, old_y, alive)).index_select(2, self._swap_index)
        ex, ey = targets[0], targets[1]  # the enemy's new position

        # Missiles chase the enemy's new position (see missiles.fly). On CPU only the slots
        # in flight are computed (a host sync is free there); on other devices every slot is.
        const = self._const
        in_flight = self._slot_count(self.m_active) if self.shaped else None  # before the step
        fly_slots = self._fly_compact if self._compact else self._fly_dense
        # [N, 2] per shooter: missiles that hit, missiles still flying.
        hits, still = fly_slots(targets)

        # Launch: slot k holds the k-th missile, so the free slot is MISSILES - stock. Without
        # a lock (enemy more than LOCK_ANGLE off the nose) the missile is spent for nothing.
        ready = flag(torch.gt, self.stock, 0.0) * flag(torch.le, self.cooldown, 0.0)
        launch = trigger * alive * ready
        rx, ry = ex - x, ey - y
        cos_off = torch.addcmul(cos * rx, sin, ry)  # |r| cos(enemy's angle off the nose)
        lock = flag(torch.ge, cos_off, torch.hypot(rx, ry) * self._lock_cos)
        locked = launch * lock
        launch_into = self._launch_compact if self._compact else self._launch_dense
        launch_into(locked, (x, y, cos, sin))
        self.stock = self.stock - launch
        cooldown = (self.cooldown - P.DT).clamp(min=0.0)
        self.cooldown = torch.lerp(cooldown, const["cooldown"], launch)
        self.fired = self.fired + launch.long()
        self.heading, self.speed, self.x, self.y = heading, speed, x, y

        # Outcome: a side dies when any enemy missile hit it this step.
        alive = alive * flag(torch.eq, swap(hits), 0.0)
        self.alive = alive
        p1, p2 = alive[:, 0], alive[:, 1]
        # Dry: no missile left on either side, none in flight ([N, 2] read as one complex64).
        flying = still + locked
        dry_out = (self.stock + flying).view(torch.complex64).squeeze(-1) == 0
        terminated = (p1 * p2 < 0.5) | dry_out
        self._fired_final = self.fired
        if self.self_play:
            self._outcome = alive - swap(alive)  # [N, 2], each agent's own view
            reward = self._self_play_reward(in_flight, hits, still, launch - locked)
            return self._add_draw_reward(reward, terminated), terminated
        outcome = p1 - p2  # +1 win, -1 loss, 0 both alive or both dead
        self._outcome = outcome
        reward = outcome
        if self.shaped and in_flight is not None:  # counted when shaping
            # Missiles gone without a hit (fuel out, left the arena): active before the step,
            # neither hit nor flying after it (before this step's launches).
            lost = in_flight - hits - still
            wasted = lost[:, 0] + (launch - locked)[:, 0]  # P1's, or launched without a lock
            defeated = lost[:, 1]  # P2's, which P1 evaded
            bonus = defeated * P.DEFEATED_MISSILE_REWARD + self.survival_reward
            reward = torch.addcmul(reward, bonus, p1).sub_(wasted, alpha=P.WASTED_MISSILE_PENALTY)
        return self._add_draw_reward(reward, terminated), terminated

    # ------------------------------------------------------------------ checkpoints
    def _extra_state(self) -> dict[str, Any]:
        state = {key: getattr(self, key).clone() for key in _STATE_KEYS}
        state["p2_obs"] = self._p2_obs.clone()
        state["opponent"] = {} if self.opponent is None else self.opponent.state_dict()
        state["pool"] = self._pool.state_dict()
        return state

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        for key in _STATE_KEYS:  # cast: flags were bool in older checkpoints
            value = state[key].to(device=self.device, dtype=getattr(self, key).dtype)
            setattr(self, key, value.clone())
        self._p2_obs = state["p2_obs"].to(self.device).clone()
        if self.opponent is not None:
            self.opponent.load_state_dict(state["opponent"])
        self._pool.load_state_dict(state["pool"])
