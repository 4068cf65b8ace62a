"""Initial states and same-step resets of the air-combat env.

:class:`Resets` holds the env's reset methods: drawing start positions and headings from the
env's :class:`~ding_lite.envs.autoreset.ResetPool` (with reset groups, ``GroupedResets``),
and resetting either the copies whose episode ended (compact, a few rows, on CPU) or every
copy blended by a mask (dense, without host syncs, elsewhere).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.fields import MixinBase
from ding_lite.envs.aircombat.slots import ACTIVE


class Resets(MixinBase):
    """The reset methods of the air-combat env (a mixin: they use the env's tensors)."""

    def _autoreset(self, done: Tensor) -> tuple[Tensor, Tensor]:
        """On CPU, resets and observes only the copies whose episode ended (a few per step):
        the rest keep their final observation. Elsewhere, the base class's dense way."""
        if not self._compact:
            return super()._autoreset(done)
        final_obs = self._obs()  # also this step's P2 obs, new: updated in place below
        obs = final_obs.clone()
        rows = done.nonzero().squeeze(1)
        self._reset_rows(rows, done)
        if rows.numel():
            fields: tuple[Tensor, ...] = (
                self.x,
                self.y,
                self.heading,
                self.speed,
                self.stock,
                self.alive,
            )
            fields = tuple(f[rows] for f in fields)
            if self.self_play:
                obs[rows] = self._observe_sides(*fields, rows)
            else:
                obs[rows], self._p2_obs[rows] = self._observe(*fields, rows)
        return obs, final_obs

    def _draw_starts(self, u: Tensor) -> dict[str, Tensor]:
        """Start positions and headings, ``[K, 2]`` each, from ``u``: ``[6, K]`` U(0, 1)."""
        # Rows of u: centre x, centre y, separation, axis, P1's heading, P2's heading.
        v = u * 2.0 - 1.0  # U(-1, 1)
        centre = v[:2] * P.START_CENTRE_SPREAD  # [2, K]: x, y
        half = 0.5 * (
            P.START_MIN_SEPARATION + u[2] * (P.START_MAX_SEPARATION - P.START_MIN_SEPARATION)
        )
        axis = u[3] * (2.0 * math.pi)
        offset = torch.stack((torch.cos(axis), torch.sin(axis))) * half  # P2's from the centre
        xy = torch.addcmul(centre[:, :, None], offset[:, :, None], self._sides)  # [2, K, 2]
        return {"x": xy[0], "y": xy[1], "heading": v[4:6].T * math.pi}

    def _reset_rows(self, rows: Tensor, done: Tensor) -> None:
        """:meth:`_reset_state` for the copies ``rows`` (int64 ``[K]``), written in place;
        ``done`` is the same copies as a bool ``[N]`` mask (for the pool)."""
        # The same pool draws as the dense way; missile slots only need their flags cleared
        # (an inactive slot's other fields are never read).
        if not rows.numel():
            self._pool.advance(done)
            return
        drawn = self._draw_starts(self._pool.values[rows].T)
        self._pool.advance(done)
        for key, value in drawn.items():
            getattr(self, key)[rows] = value
        const = self._const
        for key in ("speed", "stock"):
            getattr(self, key).index_fill_(0, rows, const[key])
        self.alive.index_fill_(0, rows, 1.0)
        self.cooldown.index_fill_(0, rows, 0.0)
        self._missiles[ACTIVE:].index_fill_(1, rows, 0.0)  # m_active, m_seen
        # A new tensor: the old one is handed out as missiles_fired.
        self.fired = self.fired.index_fill(0, rows, 0)

    def _reset_state(self, mask: Tensor | None) -> None:
        n = self.num_envs
        # Six U(0, 1) draws per copy from the pool (see ResetPool: refreshed 1/8 per step).
        u = (self._pool.take_all() if mask is None else self._pool.values).T
        # Random fields get fresh draws, the rest constants; missile slots only need their
        # flags cleared (an inactive slot's other fields are never read).
        drawn = self._draw_starts(u)
        const = self._const
        if mask is None:
            for key, value in drawn.items():
                setattr(self, key, value)
            for key in ("speed", "stock"):
                getattr(self, key).fill_(const[key])
            self.alive.fill_(1.0)
            for key in ("cooldown", "m_active", "m_seen"):
                getattr(self, key).zero_()
            self.fired.zero_()
            return
        self._pool.advance(mask)
        # A float 0/1 mask, contiguous [N, 2]: lerp with it is an exact, vectorized select.
        pair = mask[:, None].expand(n, 2).float()
        for key, value in drawn.items():  # a loop over state fields, not over copies
            setattr(self, key, torch.lerp(getattr(self, key), value, pair))
        for key in ("speed", "stock"):
            setattr(self, key, torch.lerp(getattr(self, key), const[key], pair))
        keep = 1.0 - pair
        self.cooldown = self.cooldown * keep
        self.alive = torch.maximum(self.alive, pair)
        self.fired = self.fired * keep.long()
        self._missiles[ACTIVE:].mul_(keep[:, :, None])  # m_active, m_seen
