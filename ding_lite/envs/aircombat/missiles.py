"""Homing missile flight: one step for any number of missile slots, as elementwise ops.

Used by :class:`ding_lite.envs.aircombat.env.AirCombatEnv` both on every slot (masked, on
CUDA) and on the slots in flight only (gathered, on CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.flags import flag


def fly(
    slots: tuple[Tensor, ...], targets: tuple[Tensor, ...], const: dict[str, Tensor]
) -> tuple[Tensor, ...]:
    """One step of missile flight, elementwise over any shape of slots.

    Each missile chases its target's new position: the nose points at it if that is within
    one step's turn, else turns by the most it can. Directions are unit vectors, which
    avoids trigonometry. A hit is a closest approach within the step (both moving in
    straight lines) under ``KILL_RADIUS``.

    Args:
        slots: ``(m_x, m_y, m_cx, m_cy, m_fuel, m_active)`` of the slots.
        targets: ``(tx, ty, ox, oy, target_alive)``: the target's position after and before
            the step and its alive flag, broadcastable to the slots.
        const: The env's 0-dim constants.

    Returns:
        ``(m_x, m_y, m_cx, m_cy, m_fuel, hit, m_active, m_seen)`` after the step, before
        launches; flags float 0/1.
    """
    mx, my, mcx, mcy, fuel, active = slots
    tx, ty, ox, oy, target_alive = targets
    dx, dy = tx - mx, ty - my
    d2 = torch.addcmul(dx * dx, dy, dy)
    inv = torch.rsqrt(d2.clamp(min=1.0))
    ux, uy = dx * inv, dy * inv
    turn_cos, turn_sin = const["turn_cos"], const["turn_sin"]
    within = flag(torch.ge, torch.addcmul(mcx * ux, mcy, uy), turn_cos)
    side = torch.copysign(turn_sin, torch.addcmul(mcx * uy, mcy, ux, value=-1.0))
    ncx = torch.lerp(torch.addcmul(mcx * turn_cos, mcy, side, value=-1.0), ux, within)
    ncy = torch.lerp(torch.addcmul(mcy * turn_cos, mcx, side), uy, within)
    nx = torch.add(mx, ncx, alpha=P.MISSILE_SPEED * P.DT)
    ny = torch.add(my, ncy, alpha=P.MISSILE_SPEED * P.DT)
    # Closest approach: rel(t) = r0 + t dr for t in [0, 1], r0 the missile's offset from the
    # target before the step, dr the missile's move minus the target's; q = -t keeps the
    # sums as fused multiply-adds.
    r0x, r0y = mx - ox, my - oy
    drx = torch.add(ox - tx, ncx, alpha=P.MISSILE_SPEED * P.DT)
    dry = torch.add(oy - ty, ncy, alpha=P.MISSILE_SPEED * P.DT)
    dr2 = torch.addcmul(drx * drx, dry, dry).clamp(min=1e-6)
    q = (torch.addcmul(r0x * drx, r0y, dry) / dr2).clamp(-1.0, 0.0)
    cx = torch.addcmul(r0x, drx, q, value=-1.0)
    cy = torch.addcmul(r0y, dry, q, value=-1.0)
    miss2 = torch.addcmul(cx * cx, cy, cy)  # squared miss distance
    hit = flag(torch.lt, miss2, const["kill_radius2"]) * active * target_alive
    m_fuel = fuel - const["dt"]
    # Still flying: fuel left and inside the arena (|nx|, |ny| <= ARENA_HALF).
    inside = flag(torch.le, torch.maximum(nx.abs(), ny.abs()), const["arena_half"])
    m_active = (active - hit) * inside * flag(torch.gt, m_fuel, const["zero"])
    seen = flag(torch.lt, d2, const["maw_range2"]) * m_active
    return nx, ny, ncx, ncy, m_fuel, hit, m_active, seen
