"""A group's curve of one metric over several runs: the mean and a band where the runs
overlap, and each run's own points (for ``ding-lite plot``).

Runs log at different env steps (or seconds), so each run is interpolated linearly onto a
common grid of :data:`GRID_POINTS` points spanning the range every run of the group covers
(from the latest first point to the earliest last point); nothing is extrapolated. Runs of
unequal length (a run that solved stops at its first evaluation past the target) keep
their own curves beside the mean; with ``hold_last`` each run is carried at its last value
to the end of the group's longest run before averaging. Runs with no range in common get no
mean, only their own curves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ding_lite.utils.errors import DingLiteError

GRID_POINTS = 200
BANDS = ("minmax", "ci")

# Two-sided 95% quantiles of Student's t for 1..10 degrees of freedom; above that, the
# Cornish-Fisher expansion in t_quantile is within 0.01%.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


@dataclass
class Curve:
    """A group's curve of one metric.

    Attributes:
        x: the common grid (env steps or seconds), ``(P,)``; empty when the runs share no
            range.
        mean: mean over the runs at each grid point, ``(P,)``.
        low: lower edge of the band, ``(P,)``.
        high: upper edge of the band, ``(P,)``.
        n_runs: runs in the group.
        runs: each run's own ``(xs, values)`` (held at its last value with ``hold_last``).
    """

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_runs: int
    runs: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    @property
    def overlaps(self) -> bool:
        """Whether the runs share a range (so there is a mean to draw)."""
        return len(self.x) > 0


def t_quantile(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def held_at_last(
    runs: Sequence[tuple[np.ndarray, np.ndarray]],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each run carried at its last value to the largest last x of ``runs``."""
    end = max(float(xs[-1]) for xs, _ in runs)
    return [
        (np.append(xs, end), np.append(ys, ys[-1])) if xs[-1] < end else (xs, ys) for xs, ys in runs
    ]


def aggregate(
    runs: Sequence[tuple[np.ndarray, np.ndarray]],
    band: str = "minmax",
    points: int = GRID_POINTS,
    hold_last: bool = False,
) -> Curve:
    """Mean and band of several runs' curves on a common grid.

    Each run (``(xs, values)``, xs increasing, at least one point) is interpolated linearly
    onto ``points`` evenly spaced x over the range all runs cover: from the largest first x
    to the smallest last x. Runs that share no range give a curve without a mean
    (``overlaps`` false) that still holds each run.

    Args:
        runs: the runs' curves.
        band: ``"minmax"`` (the runs' lowest and highest value) or ``"ci"`` (the 95%
            t-interval of the mean, ``mean +- t(n-1) * std / sqrt(n)``; no width for one run).
        points: grid points.
        hold_last: carry each run at its last value to the end of the longest run first.

    Raises:
        DingLiteError: no run given, or an unknown band.
    """
    if not runs:
        raise DingLiteError("no run to aggregate")
    if band not in BANDS:
        raise DingLiteError(f"unknown band {band!r}; known: {', '.join(BANDS)}")
    runs = held_at_last(runs) if hold_last else list(runs)
    first = max(float(xs[0]) for xs, _ in runs)
    last = min(float(xs[-1]) for xs, _ in runs)
    n = len(runs)
    if first > last:
        empty = np.zeros(0)
        return Curve(empty, empty, empty, empty, n, runs)
    grid = np.linspace(first, last, points if last > first else 1)
    values = np.stack([np.interp(grid, xs, ys) for xs, ys in runs])  # (runs, P)
    mean = values.mean(axis=0)
    if band == "minmax":
        low, high = values.min(axis=0), values.max(axis=0)
    elif n == 1:
        low, high = mean.copy(), mean.copy()
    else:
        half = t_quantile(n - 1) * values.std(axis=0, ddof=1) / math.sqrt(n)
        low, high = mean - half, mean + half
    return Curve(grid, mean, low, high, n, runs)
