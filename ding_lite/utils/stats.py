"""Statistics for reports: episode outcomes (win / loss / draw) and binomial intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class OutcomeCounts:
    """Wins, losses and draws among finished episodes."""

    wins: int
    losses: int
    draws: int

    @property
    def n(self) -> int:
        """Episodes counted."""
        return self.wins + self.losses + self.draws

    def rates(self) -> dict[str, float]:
        """``{"win_rate", "loss_rate", "draw_rate"}``, fractions of :attr:`n` (NaN when 0)."""
        n = self.n
        if n == 0:
            return {"win_rate": math.nan, "loss_rate": math.nan, "draw_rate": math.nan}
        return {
            "win_rate": self.wins / n,
            "loss_rate": self.losses / n,
            "draw_rate": self.draws / n,
        }


def count_outcomes(outcomes: Tensor | Sequence[float]) -> OutcomeCounts:
    """Counts episode outcomes coded +1 win, -1 loss, 0 draw (by sign).

    Args:
        outcomes: ``[E]`` outcomes of finished episodes, a tensor or a list of floats.
    """
    # Plain Python, so the coordinator's process (lists only) never imports torch.
    values = list(outcomes) if isinstance(outcomes, Sequence) else outcomes.reshape(-1).tolist()
    wins = sum(1 for v in values if v > 0)
    losses = sum(1 for v in values if v < 0)
    return OutcomeCounts(wins=wins, losses=losses, draws=len(values) - wins - losses)


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n``.

    Unlike the normal approximation ``p +- z sqrt(p (1 - p) / n)`` it stays inside
    ``[0, 1]`` and does not shrink to a point at ``k = 0`` or ``k = n``.

    Args:
        k: successes, ``0 <= k <= n``.
        n: trials, at least 1.
        z: standard-normal quantile; 1.96 gives a 95% interval.

    Returns:
        ``(low, high)``.

    Raises:
        ValueError: ``n < 1`` or ``k`` outside ``[0, n]``.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
