"""Frames of the air-combat env: a top view of copy 0 (``render``), drawn with numpy."""

from __future__ import annotations

import math

import numpy as np
import torch

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.fields import MixinBase
from ding_lite.envs.canvas import Canvas

FRAME_SIZE = 512  # frames are FRAME_SIZE x FRAME_SIZE pixels
MARGIN = 16  # pixels between the image's edge and the arena's wall
COLORS = ((31, 119, 180), (214, 39, 40))  # P1 blue, P2 red
MISSILE_COLORS = ((120, 170, 220), (240, 140, 140))  # lighter, per shooter
DEAD = (90, 90, 90)


class Drawing(MixinBase):
    """Mixin of :class:`~ding_lite.envs.aircombat.env.AirCombatEnv`: ``render()``.

    Reads the env's public state tensors of copy 0 (``x``, ``y``, ``heading``, ``alive``,
    ``m_x``, ``m_y``, ``m_active``) and changes nothing.
    """

    # One step is DT = 1 s; 30 frames a second shows a 600-step episode in 20 s.
    render_fps = 30

    def render(self) -> np.ndarray:
        """Copy 0 as it is now, from above: uint8 ``[512, 512, 3]``.

        The arena's wall (grey), each aircraft as a disc with a line along its heading (P1
        blue, P2 red; dark grey once destroyed) and each missile in flight as a small disc
        in a lighter shade of its shooter's colour. North (``+y``) is up.
        """
        # One host copy of everything drawn: [2, 4] aircraft rows, [2, 3, M] missile rows.
        planes = torch.stack([self.x[0], self.y[0], self.heading[0], self.alive[0]], 1).cpu()
        missiles = torch.stack([self.m_x[0], self.m_y[0], self.m_active[0]], 1).cpu()
        canvas = Canvas(FRAME_SIZE, FRAME_SIZE, background=(250, 250, 245))
        scale = (FRAME_SIZE - 2 * MARGIN) / (2 * P.ARENA_HALF)

        def pixel(x: float, y: float) -> tuple[float, float]:
            return FRAME_SIZE / 2 + x * scale, FRAME_SIZE / 2 - y * scale

        low, high = MARGIN - 2, FRAME_SIZE - MARGIN + 2
        for a, b, c, d in ((low, low, high, low + 2), (low, high - 2, high, high)):
            canvas.rect(a, b, c, d, (170, 170, 170))  # the wall: top and bottom
            canvas.rect(b, a, d, c, (170, 170, 170))  # left and right
        for shooter in range(2):
            for mx, my, active in missiles[shooter].T.tolist():
                if active > 0.5:
                    canvas.disc(*pixel(mx, my), 3.0, MISSILE_COLORS[shooter])
        for side in range(2):
            x, y, heading, alive = planes[side].tolist()
            px, py = pixel(x, y)
            color = COLORS[side] if alive > 0.5 else DEAD
            nose = 18.0
            canvas.segment(
                px, py, px + nose * math.cos(heading), py - nose * math.sin(heading), 3.0, color
            )
            canvas.disc(px, py, 7.0, color)
        return canvas.pixels
