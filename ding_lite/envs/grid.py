"""``grid``: a small multi-agent grid world in the spirit of MettaGrid.

Several agents per env copy share one policy (one row each); each sees an egocentric window
of channels around itself. Two kinds of resource lie on the floor; at the start of every
episode a cue, shown for the first ``cue_steps`` steps only, says which kind pays this
episode, so an agent must remember it (memory); a resource, once taken, is gone for
``regrow_steps`` steps and agents that reach one on the same step split it (competition).
All copies and agents step as one tensor batch, on any device.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.canvas import Canvas
from ding_lite.envs.spaces import Discrete

STAY, UP, DOWN, LEFT, RIGHT = range(5)
#: Row and column change of each action.
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
#: Observation channels, in order.
CHANNELS = ("wall", "resource_a", "resource_b", "agents", "cue")
WALL, RES_A, RES_B, AGENTS, CUE = range(len(CHANNELS))
GOOD_REWARD = 1.0  # a resource of the kind the cue named
CELL_PIXELS = 32  # frame size of one cell
_COLORS = {
    "floor": (235, 235, 235),
    "wall": (60, 60, 60),
    "res_a": (220, 60, 60),
    "res_b": (60, 90, 220),
    "agent": (40, 160, 70),
}


def _positive_int(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"grid: {name} must be an int >= {low}, got {value!r}")
    return value


class GridEnv(TensorVectorEnv):
    """Agents on a walled ``size`` x ``size`` floor collect resources of the paying kind.

    Each copy draws, at every reset, distinct random cells for its ``num_agents`` agents and
    ``num_resources`` resources of each of two kinds (A and B), and which kind pays.

    - Observation float32 ``[N, A, C, H, W]`` with ``C = 5`` channels (:data:`CHANNELS`):
      walls (everything outside the floor is wall), resources of kind A and of kind B that
      are present, other agents (a count per cell), and the cue: the whole plane is +1
      when kind A pays and -1 when kind B pays during the first ``cue_steps`` steps of an
      episode, 0 afterwards. The window is ``obs_height`` x ``obs_width`` (odd), centred on
      the agent, which sits in the middle cell.
    - Action ``Discrete(5)`` per agent, ``[N, A]``: stay, up, down, left, right. A move into
      a wall leaves the agent where it is; agents may share cells.
    - Reward float32 ``[N, A]``: an agent that ends its step on a present resource takes
      it: ``GOOD_REWARD`` (1.0) for the paying kind, ``-wrong_penalty`` for the other,
      divided among the agents that reached it on the same step. A taken resource is
      absent for ``regrow_steps`` steps, then back on its cell.
    - Episodes last ``max_steps`` steps (truncation); nothing terminates them earlier.

    Without memory an agent cannot tell the kinds apart after the cue: its best is to take
    everything, worth ``(1 - wrong_penalty) / 2`` per resource; with memory it takes the
    paying kind only, worth 1 each. A uniformly random policy takes both kinds alike, so its
    return is small but positive.

    Attributes:
        size: Side of the floor in cells.
        pos: int64 ``[N, A, 2]``, each agent's (row, column) on the floor.
        res_pos: int64 ``[N, 2R, 2]``: the cells of the resources, kind A first.
        res_timer: int64 ``[N, 2R]``: steps until each resource is back (0: present).
        paying: int64 ``[N]``: the kind that pays, 0 (A) or 1 (B).
        t: int64 ``[N]``: steps taken in the current episode.
    """

    name = "grid"
    num_agents = 4
    render_fps = 4

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        num_agents: int = 4,
        size: int = 13,
        obs_width: int = 11,
        obs_height: int = 11,
        num_resources: int = 6,
        regrow_steps: int = 10,
        cue_steps: int = 1,
        wrong_penalty: float = 0.5,
        max_steps: int = 32,
    ) -> None:
        """Builds ``num_envs`` copies; call :meth:`reset` before stepping.

        Args:
            num_envs: Number of copies ``N``.
            device: Device of all tensors.
            seed: Seed of the first :meth:`reset`.
            num_agents: Agents per copy ``A`` (at least 2: they compete for resources).
            size: Side of the walled floor, in cells.
            obs_width: Columns of each agent's window (odd).
            obs_height: Rows of each agent's window (odd).
            num_resources: Resources of each kind per copy.
            regrow_steps: Steps a taken resource stays absent.
            cue_steps: Steps at the start of an episode during which the cue is shown.
            wrong_penalty: What taking a resource of the other kind costs (in [0, 1)).
            max_steps: Steps per episode.

        Raises:
            ValueError: an option out of range (the message names it), or more agents and
                resources than cells.
        """
        _positive_int("num_agents", num_agents, 2)
        _positive_int("size", size, 2)
        for key, value in (("obs_width", obs_width), ("obs_height", obs_height)):
            if _positive_int(key, value) % 2 == 0:
                raise ValueError(f"grid: {key} must be odd (the agent sits in the middle)")
        _positive_int("num_resources", num_resources)
        _positive_int("regrow_steps", regrow_steps)
        _positive_int("cue_steps", cue_steps)
        _positive_int("max_steps", max_steps)
        if not 0.0 <= float(wrong_penalty) < 1.0:
            raise ValueError(f"grid: wrong_penalty must be in [0, 1), got {wrong_penalty!r}")
        if num_agents + 2 * num_resources > size * size:
            raise ValueError(
                f"grid: {num_agents} agents and 2 x {num_resources} resources do not fit on "
                f"{size * size} cells; raise size or lower num_resources"
            )
        super().__init__(
            num_envs=num_envs,
            obs_shape=(len(CHANNELS), obs_height, obs_width),
            action_space=Discrete(len(MOVES)),
            max_episode_steps=max_steps,
            device=device,
            seed=seed,
            num_agents=num_agents,
        )
        self.size = size
        self.num_resources = num_resources
        self.regrow_steps = regrow_steps
        self.cue_steps = cue_steps
        self.wrong_penalty = float(wrong_penalty)
        self._ry, self._rx = obs_height // 2, obs_width // 2
        dev = self.device
        self._moves = torch.tensor(MOVES, dtype=torch.int64, device=dev)
        # The floor padded by the window's reach: walls everywhere off the floor.
        self._padded = (size + 2 * self._ry, size + 2 * self._rx)
        walls = torch.ones(self._padded, device=dev)
        walls[self._ry : self._ry + size, self._rx : self._rx + size] = 0.0
        self._walls = walls
        self._dy = torch.arange(-self._ry, self._ry + 1, device=dev)
        self._dx = torch.arange(-self._rx, self._rx + 1, device=dev)
        kinds = torch.arange(2, device=dev).repeat_interleave(num_resources)
        self._res_kind = kinds  # [2R]: 0 for kind A, 1 for kind B
        n, a, r2 = num_envs, num_agents, 2 * num_resources
        self.pos = torch.zeros((n, a, 2), dtype=torch.int64, device=dev)
        self.res_pos = torch.zeros((n, r2, 2), dtype=torch.int64, device=dev)
        self.res_timer = torch.zeros((n, r2), dtype=torch.int64, device=dev)
        self.paying = torch.zeros(n, dtype=torch.int64, device=dev)
        self.t = torch.zeros(n, dtype=torch.int64, device=dev)

    # ----------------------------------------------------------------- env hooks
    def _reset_state(self, mask: Tensor | None) -> None:
        n, a = self.num_envs, self.num_agents
        cells = self.size * self.size
        # Distinct cells per copy: the first A + 2R of a random permutation of the floor.
        noise = torch.rand((n, cells), generator=self.generator, device=self.device)
        picked = noise.argsort(dim=1)[:, : a + self.res_pos.shape[1]]
        rows_cols = torch.stack((picked // self.size, picked % self.size), dim=2)
        paying = torch.randint(0, 2, (n,), generator=self.generator, device=self.device)
        fresh = {
            "pos": rows_cols[:, :a],
            "res_pos": rows_cols[:, a:],
            "res_timer": torch.zeros_like(self.res_timer),
            "paying": paying,
            "t": torch.zeros_like(self.t),
        }
        for key, value in fresh.items():
            old = getattr(self, key)
            if mask is None:
                setattr(self, key, value)
            else:
                keep = mask.view(-1, *([1] * (old.dim() - 1)))
                setattr(self, key, torch.where(keep, value, old))

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        self.pos = (self.pos + self._moves[action]).clamp(0, self.size - 1)
        self.t = self.t + 1
        present = self.res_timer == 0  # [N, 2R]
        # on[n, a, r]: agent a stands on present resource r.
        on = (self.pos.unsqueeze(2) == self.res_pos.unsqueeze(1)).all(dim=3) & present.unsqueeze(1)
        takers = on.sum(dim=1)  # [N, 2R], agents splitting each resource
        good = self._res_kind.unsqueeze(0) == self.paying.unsqueeze(1)  # [N, 2R]
        value = torch.where(good, GOOD_REWARD, -self.wrong_penalty)
        share = value / takers.clamp(min=1)
        reward = (on.float() * share.unsqueeze(1)).sum(dim=2)
        taken = takers > 0
        timer = (self.res_timer - 1).clamp(min=0)
        self.res_timer = torch.where(taken, self.regrow_steps, timer)
        return reward, torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)

    def _obs(self) -> Tensor:
        return self.windows(self._planes())

    # ------------------------------------------------------------------- helpers
    def _planes(self) -> Tensor:
        """The padded map of every copy: float32 ``[N, C, Hp, Wp]``."""
        n, (hp, wp) = self.num_envs, self._padded
        planes = torch.zeros((n, len(CHANNELS), hp * wp), device=self.device)
        planes[:, WALL] = self._walls.flatten()
        flat_res = (self.res_pos[..., 0] + self._ry) * wp + self.res_pos[..., 1] + self._rx
        present = (self.res_timer == 0).float()
        res_planes = torch.zeros((n, 2, hp * wp), device=self.device)
        kind_index = self._res_kind.unsqueeze(0).expand_as(flat_res)
        res_planes.view(n, -1).scatter_add_(1, kind_index * hp * wp + flat_res, present)
        planes[:, RES_A : RES_B + 1] = res_planes
        flat_agent = (self.pos[..., 0] + self._ry) * wp + self.pos[..., 1] + self._rx
        planes[:, AGENTS].scatter_add_(
            1, flat_agent, torch.ones_like(flat_agent, dtype=torch.float32)
        )
        cue = torch.where(self.paying == 0, 1.0, -1.0) * (self.t < self.cue_steps).float()
        planes[:, CUE] = cue.unsqueeze(1)
        return planes.view(n, len(CHANNELS), hp, wp)

    def windows(self, planes: Tensor) -> Tensor:
        """Each agent's egocentric window of ``planes`` (``[N, C, Hp, Wp]``, padded as
        :meth:`_planes` builds them): float32 ``[N, A, C, H, W]``, the agent itself not
        counted in the agents channel."""
        rows = (self.pos[..., 0] + self._ry).unsqueeze(2) + self._dy  # [N, A, H]
        cols = (self.pos[..., 1] + self._rx).unsqueeze(2) + self._dx  # [N, A, W]
        copy = torch.arange(self.num_envs, device=self.device).view(-1, 1, 1, 1)
        # Advanced indices around a slice: the result is [N, A, H, W, C].
        win = planes[copy, :, rows.unsqueeze(3), cols.unsqueeze(2)]
        win = win.permute(0, 1, 4, 2, 3).contiguous()
        win[:, :, AGENTS, self._ry, self._rx] -= 1.0
        return win

    def render(self) -> np.ndarray:
        """Copy 0 seen from above: uint8 ``[size * 32 + 64, size * 32 + 64, 3]``.

        Walls dark grey, resources of kind A red and of kind B blue (faint while absent),
        agents green discs; the paying kind's colour frames the picture while the cue is
        shown."""
        side = (self.size + 2) * CELL_PIXELS
        paying = int(self.paying[0])
        cue_on = int(self.t[0]) < self.cue_steps
        border = _COLORS["res_a" if paying == 0 else "res_b"] if cue_on else _COLORS["wall"]
        canvas = Canvas(side, side, border)
        inner = 4 if cue_on else 0
        canvas.rect(inner, inner, side - inner, side - inner, _COLORS["wall"])
        lo, hi = CELL_PIXELS, side - CELL_PIXELS
        canvas.rect(lo, lo, hi, hi, _COLORS["floor"])
        for (row, col), kind, timer in zip(
            self.res_pos[0].tolist(),
            self._res_kind.tolist(),
            self.res_timer[0].tolist(),
            strict=True,
        ):
            color = np.array(_COLORS["res_b" if kind else "res_a"])
            if timer:  # absent: drawn faint where it will come back
                color = (color + 3 * np.array(_COLORS["floor"])) // 4
            x0, y0 = (col + 1) * CELL_PIXELS, (row + 1) * CELL_PIXELS
            canvas.rect(x0 + 6, y0 + 6, x0 + CELL_PIXELS - 6, y0 + CELL_PIXELS - 6, tuple(color))
        for row, col in self.pos[0].tolist():
            cx, cy = (col + 1.5) * CELL_PIXELS, (row + 1.5) * CELL_PIXELS
            canvas.disc(cx, cy, CELL_PIXELS * 0.3, _COLORS["agent"])
        return canvas.pixels

    def _extra_state(self) -> dict[str, Any]:
        keys = ("pos", "res_pos", "res_timer", "paying", "t")
        return {key: getattr(self, key).clone() for key in keys}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        for key in ("pos", "res_pos", "res_timer", "paying", "t"):
            setattr(self, key, state[key].to(self.device, torch.int64).clone())
