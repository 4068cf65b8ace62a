"""A small numpy raster for the bundled envs' frames: filled rectangles, discs and thick
segments on an RGB image, without anti-aliasing.

Each shape touches only the pixels of its bounding box, so a frame of a dozen shapes costs
well under a millisecond; nothing beyond numpy is needed. Coordinates are pixels as floats,
``x`` to the right and ``y`` down, pixel ``(i, j)`` centred at ``(j + 0.5, i + 0.5)``.
"""

from __future__ import annotations

import math

import numpy as np

Color = tuple[int, int, int]


class Canvas:
    """An RGB image to draw shapes on.

    Args:
        width, height: size in pixels.
        background: the colour every pixel starts with.

    Attributes:
        pixels: uint8 ``[height, width, 3]``, the image (shapes draw into it in place).
    """

    def __init__(self, width: int, height: int, background: Color = (255, 255, 255)) -> None:
        self.pixels = np.empty((height, width, 3), dtype=np.uint8)
        self.pixels[:] = background
        self.width, self.height = width, height

    def rect(self, x0: float, y0: float, x1: float, y1: float, color: Color) -> None:
        """Fills the axis-aligned rectangle with corners ``(x0, y0)`` and ``(x1, y1)``."""
        rows = self._span(min(y0, y1), max(y0, y1), self.height)
        cols = self._span(min(x0, x1), max(x0, x1), self.width)
        if rows and cols:
            self.pixels[rows[0] : rows[1], cols[0] : cols[1]] = color

    def disc(self, cx: float, cy: float, radius: float, color: Color) -> None:
        """Fills the disc of ``radius`` pixels around ``(cx, cy)``."""
        self.segment(cx, cy, cx, cy, 2.0 * radius, color)

    def segment(
        self, x0: float, y0: float, x1: float, y1: float, width: float, color: Color
    ) -> None:
        """Draws the segment from ``(x0, y0)`` to ``(x1, y1)``, ``width`` pixels thick, with
        round ends: every pixel whose centre lies within ``width / 2`` of the segment."""
        if not all(math.isfinite(v) for v in (x0, y0, x1, y1, width)):
            return  # e.g. a diverged state: nothing to draw
        half = 0.5 * width
        rows = self._span(min(y0, y1) - half, max(y0, y1) + half, self.height)
        cols = self._span(min(x0, x1) - half, max(x0, x1) + half, self.width)
        if not (rows and cols):
            return
        ys = np.arange(rows[0], rows[1], dtype=np.float32)[:, None] + 0.5
        xs = np.arange(cols[0], cols[1], dtype=np.float32)[None, :] + 0.5
        dx, dy = x1 - x0, y1 - y0
        length2 = dx * dx + dy * dy
        px: np.ndarray | float
        py: np.ndarray | float
        if length2 > 0.0:  # the closest point of the segment to each pixel centre
            t = np.clip(((xs - x0) * dx + (ys - y0) * dy) / length2, 0.0, 1.0)
            px, py = x0 + t * dx, y0 + t * dy
        else:
            px, py = x0, y0
        inside = (xs - px) ** 2 + (ys - py) ** 2 <= half * half
        self.pixels[rows[0] : rows[1], cols[0] : cols[1]][inside] = color

    @staticmethod
    def _span(low: float, high: float, size: int) -> tuple[int, int] | None:
        """The pixel indices ``[start, stop)`` whose centres lie in ``[low, high]``, clipped
        to ``[0, size)``; None when empty (or not finite)."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return None
        start = max(0, math.ceil(low - 0.5))
        stop = min(size, math.floor(high - 0.5) + 1)
        return (start, stop) if start < stop else None
