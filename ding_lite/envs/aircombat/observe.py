"""Observations of the air-combat env, and the helpers that swap or wrap its ``[N, 2]`` fields."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.fields import MixinBase

OBS_DIM = 10
#: ``observe="missiles"`` adds: an enemy missile in the missile-approach warner's range
#: (0/1), the nearest enemy missile in flight's proximity (1 - distance / DISTANCE_SCALE,
#: 0 without one) and bearing from the own heading (/ pi, 0 without one), and the share of
#: the own missiles in flight.
MISSILE_OBS_DIM = 4
#: ``observe="stock"`` adds, after those of ``"missiles"``: the enemy's missiles left
#: (/ MISSILES).
STOCK_OBS_DIM = 1
#: The observe options, each the one before it plus some features after (a policy trained
#: on one can read the leading features of a larger one).
OBSERVE = ("base", "missiles", "stock")
_DIMS = {
    "base": OBS_DIM,
    "missiles": OBS_DIM + MISSILE_OBS_DIM,
    "stock": OBS_DIM + MISSILE_OBS_DIM + STOCK_OBS_DIM,
}


def observe_dim(observe: str) -> int:
    """The observation size of an ``observe`` option.

    Raises:
        ValueError: an unknown option.
    """
    if observe not in OBSERVE:
        raise ValueError(f"observe must be one of {', '.join(OBSERVE)}; got {observe!r}")
    return _DIMS[observe]


_SWAP_INDEX: dict[torch.device, Tensor] = {}


def swap_index(device: torch.device) -> Tensor:
    """int64 ``[1, 0]`` on ``device``, made once per device."""
    index = _SWAP_INDEX.get(device)
    if index is None:
        index = _SWAP_INDEX[device] = torch.tensor([1, 0], device=device)
    return index


def swap(pair: Tensor) -> Tensor:
    """Swaps the two aircraft of ``[N, 2, ...]`` (P1's view of P2 and back).

    ``index_select`` with a cached index is cheaper than ``flip`` on CPU.
    """
    return pair.index_select(1, swap_index(pair.device))


def wrap(angle: Tensor) -> Tensor:
    """Wraps radians to ``[-pi, pi)``."""
    return torch.remainder(angle + math.pi, 2.0 * math.pi) - math.pi


class Observation(MixinBase):
    """The observation methods of the air-combat env (a mixin: they use the env's tensors).

    Both aircraft are observed by the same function, each from its own side (own fields
    first, the enemy's relative to its own heading), so one policy can fly either.
    """

    def _obs(self) -> Tensor:
        fields = (self.x, self.y, self.heading, self.speed, self.stock, self.alive)
        if self.self_play:
            return self._observe_sides(*fields)
        obs, self._p2_obs = self._observe(*fields)
        return obs

    def _observe(
        self,
        x: Tensor,
        y: Tensor,
        heading: Tensor,
        speed: Tensor,
        stock: Tensor,
        alive: Tensor,
        rows: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """float32 ``[K, D]`` observations of P1 and P2 from ``[K, 2]`` state fields (of the
        copies ``rows``, None: all).

        P1's is contiguous (it is returned to the caller); P2's is a strided view, read only
        by the opponent, which spares a transposing copy.
        """
        features = self._features(x, y, heading, speed, stock, alive, rows)
        # One transposing copy for P1. (Stacking [K, 2] columns along a new last dim instead
        # is several times slower.)
        return features[:, :, 0].T.contiguous(), features[:, :, 1].T

    def _observe_sides(
        self,
        x: Tensor,
        y: Tensor,
        heading: Tensor,
        speed: Tensor,
        stock: Tensor,
        alive: Tensor,
        rows: Tensor | None = None,
    ) -> Tensor:
        """float32 ``[K, 2, D]``, contiguous: row ``[k, i]`` is aircraft ``i``'s observation
        (the self-play obs, aircraft = agent)."""
        features = self._features(x, y, heading, speed, stock, alive, rows)
        return features.permute(1, 2, 0).contiguous()

    def _features(
        self,
        x: Tensor,
        y: Tensor,
        heading: Tensor,
        speed: Tensor,
        stock: Tensor,
        alive: Tensor,
        rows: Tensor | None = None,
    ) -> Tensor:
        """float32 ``[D, K, 2]``: feature, copy, observing aircraft (P1, P2)."""
        dx, dy = x[:, 1] - x[:, 0], y[:, 1] - y[:, 0]
        # Contiguous: one strided input sends the whole stack below down a slow path.
        dist = torch.hypot(dx, dy)[:, None].expand_as(x).contiguous()
        line = torch.atan2(dy, dx)  # direction from P1 to P2; P2 sees P1 at line + pi
        bearing = wrap(line[:, None] + self._bearing_offset - heading)
        # [features, K, 2]; the last two rows (enemy speed and alive) are swapped copies of
        # own speed and alive.
        features = torch.stack((x, y, heading, speed, stock, alive, dist, bearing, speed, alive))
        torch.index_select(features[3:6:2], 2, self._swap_index, out=features[8:])
        features.mul_(self._obs_scale)
        if self.obs_shape[0] == OBS_DIM:
            return features
        parts = [features, self._missile_features(x, y, heading, rows)]
        if self.obs_shape[0] == _DIMS["stock"]:
            parts.append(features[4:5].index_select(2, self._swap_index))  # the enemy's stock
        return torch.cat(parts)

    def _missile_features(
        self, x: Tensor, y: Tensor, heading: Tensor, rows: Tensor | None
    ) -> Tensor:
        """float32 ``[4, K, 2]``: the ``observe="missiles"`` features (see
        :data:`MISSILE_OBS_DIM`) of the copies ``rows`` (None: all), per observer."""
        m_x, m_y, active, seen = self.m_x, self.m_y, self.m_active, self.m_seen
        if rows is not None:
            m_x, m_y, active, seen = m_x[rows], m_y[rows], active[rows], seen[rows]
        # [K, observer, slot]: the enemy's missiles (shooter 1 - observer).
        dx, dy = swap(m_x) - x[..., None], swap(m_y) - y[..., None]
        dist = torch.hypot(dx, dy).masked_fill(swap(active) <= 0, math.inf)
        nearest, slot = dist.min(-1)
        flying = torch.isfinite(nearest)
        angle = torch.atan2(dy.gather(-1, slot[..., None]), dx.gather(-1, slot[..., None]))
        bearing = wrap(angle.squeeze(-1) - heading) / math.pi
        proximity = (1.0 - nearest / P.DISTANCE_SCALE).clamp(0.0, 1.0)
        return torch.stack(
            (
                swap(seen).amax(-1),
                torch.where(flying, proximity, 0.0),
                torch.where(flying, bearing, 0.0),
                active.sum(-1) / P.MISSILES,
            )
        )
