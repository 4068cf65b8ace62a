"""The missile slots of :class:`~ding_lite.envs.aircombat.env.AirCombatEnv`.

Every slot field is a row of one ``[fields, N, 2, MISSILES]`` block, so launching, flying
and resetting touch one tensor. :class:`MissileSlots` holds the env's slot methods: flying
and launching either on every slot (dense, best on CUDA) or on the few in flight (compact,
best on CPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.fields import MixinBase
from ding_lite.envs.aircombat.missiles import fly

if TYPE_CHECKING:
    from ding_lite.envs.aircombat.env import AirCombatEnv

# Missile slot fields, in the order of their rows in AirCombatEnv._missiles.
MISSILE_FIELDS = ("m_x", "m_y", "m_cx", "m_cy", "m_fuel", "m_active", "m_seen")
ACTIVE, SEEN = MISSILE_FIELDS.index("m_active"), MISSILE_FIELDS.index("m_seen")


def missile_field(name: str) -> property:
    """A missile slot field: a ``[N, 2, MISSILES]`` view of its row of ``_missiles``;
    assigning to it copies into that row."""
    row = MISSILE_FIELDS.index(name)

    def get(self: AirCombatEnv) -> Tensor:
        return self._missiles[row]

    def set(self: AirCombatEnv, value: Tensor) -> None:
        self._missiles[row] = value

    return property(get, set, doc=f"``[N, 2, MISSILES]`` view of row {row} of the slot block.")


class MissileSlots(MixinBase):
    """The slot methods of the air-combat env (a mixin: they use the env's tensors)."""

    def _fly_dense(self, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Flies every missile slot; updates the slot fields and ``m_seen``.

        Args:
            targets: ``[5, N, 2]``: for shooter ``s``, its target's x and y after the step,
                x and y before it, and alive flag.

        Returns:
            ``(hits, still)``, float32 ``[N, 2]`` per shooter: missiles that hit, and
            missiles still in flight.
        """
        nx, ny, ncx, ncy, fuel, hit, m_active, seen = fly(
            tuple(self._missiles[:SEEN]),
            tuple(targets[..., None]),
            self._const,
        )
        self._missiles = torch.stack((nx, ny, ncx, ncy, fuel, m_active, seen))
        return self._slot_count(hit), self._slot_count(m_active)

    def _fly_compact(self, targets: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`_fly_dense` for the slots in flight only (a few per copy), gathered into
        flat tensors and written back in place: much less memory traffic on CPU."""
        block = self._missiles.view(len(MISSILE_FIELDS), -1)  # [fields, slots]
        # Flat slot indices in flight; flags read as int32 bits (+0.0 is 0) scan faster.
        idx = block[ACTIVE].view(torch.int32).nonzero().squeeze(1)
        shooter = idx.div(P.MISSILES, rounding_mode="floor")  # flat (copy, shooter) index
        slots = block[:SEEN].index_select(1, idx)
        nx, ny, ncx, ncy, fuel, hit, m_active, seen = fly(
            slots.unbind(0), targets.view(5, -1).index_select(1, shooter).unbind(0), self._const
        )
        # Only slots in flight have m_seen set (it is cleared as a slot stops flying), so
        # writing back the slots that flew updates every field of every slot. (scatter_ is
        # several times faster than index_copy_ here on CPU.)
        new = torch.stack((nx, ny, ncx, ncy, fuel, m_active, seen))
        block.scatter_(1, idx.expand_as(new), new)
        counts = torch.zeros(2, 2 * self.num_envs, device=self.device)
        counts[0].index_add_(0, shooter, hit)
        counts[1].index_add_(0, shooter, m_active)
        return counts[0].view(-1, 2), counts[1].view(-1, 2)

    def _launch_dense(self, locked: Tensor, start: tuple[Tensor, ...]) -> None:
        """Puts a missile in the free slot of each aircraft where ``locked`` (``[N, 2]``).

        Slot k holds the k-th missile, so the free slot is ``MISSILES - stock`` (the stock
        before this launch). ``start`` is ``(x, y, cos, sin)`` of the aircraft, ``[N, 2]``.
        """
        slot = P.MISSILES - self.stock
        new = torch.eq(self._slots, slot[..., None], out=torch.empty_like(self.m_x))
        new = new * locked[..., None]  # [N, 2, M]: the launched missile's slot
        # m_x, m_y, m_cx, m_cy, m_fuel of the new slot; the k-th slot is free until the k-th
        # launch, so m_active += new.
        values = torch.stack((*start, self._const["fuel"].expand_as(start[0])))
        self._missiles[:ACTIVE].lerp_(values[..., None], new)
        self._missiles[ACTIVE].add_(new)

    def _launch_compact(self, locked: Tensor, start: tuple[Tensor, ...]) -> None:
        """:meth:`_launch_dense` for the few launching aircraft, written in place."""
        shooter = locked.view(-1).nonzero().squeeze(1)  # flat (copy, shooter) index
        if not shooter.numel():
            return
        free = (P.MISSILES - self.stock.view(-1)[shooter]).long()
        idx = shooter * P.MISSILES + free  # flat slot index
        block = self._missiles.view(len(MISSILE_FIELDS), -1)
        values = torch.stack(start).view(len(start), -1).index_select(1, shooter)
        block[: len(start)].index_copy_(1, idx, values)  # m_x, m_y, m_cx, m_cy
        block[ACTIVE - 1].index_fill_(0, idx, P.MISSILE_FLIGHT_TIME)  # m_fuel
        block[ACTIVE].index_fill_(0, idx, 1.0)

    def _slot_count(self, flags: Tensor) -> Tensor:
        """float32 ``[N, 2]``: the set 0/1 flags of each ``[N, 2, MISSILES]`` slot row.

        A matrix-vector product: ``sum(-1)`` over a short last dim is a slow strided kernel.
        """
        return flags.view(-1, P.MISSILES).mv(self._ones_slots).view(self.num_envs, 2)
