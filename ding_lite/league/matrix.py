"""Exact figures of a symmetric two-player zero-sum matrix game, for the league's proofs.

``payoff[i][j]`` is what a player gains playing action ``i`` against action ``j``; the game
is symmetric and zero-sum (``payoff[j][i] == -payoff[i][j]``), so its value is 0 and a
strategy is optimal when no action gains against it. Plain self-play cycles on such games
when the payoffs are uneven; a league's main policy should come near the equilibrium.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ding_lite.league.table import LeagueError

Matrix = Sequence[Sequence[float]]


def check_game(payoff: Matrix) -> int:
    """The number of actions of a symmetric zero-sum game ``payoff``.

    Raises:
        LeagueError: not square, not finite, or not ``payoff[j][i] == -payoff[i][j]``.
    """
    n = len(payoff)
    if n < 2 or any(len(row) != n for row in payoff):
        raise LeagueError("a matrix game's payoff must be square, with at least 2 actions")
    for i in range(n):
        for j in range(n):
            if not math.isfinite(payoff[i][j]) or payoff[j][i] != -payoff[i][j]:
                raise LeagueError("a matrix game's payoff must be finite and zero-sum symmetric")
    return n


def _strategy(policy: Sequence[float], n: int) -> list[float]:
    total = sum(policy)
    if len(policy) != n or any(p < 0 or not math.isfinite(p) for p in policy) or total <= 0:
        raise LeagueError(f"a strategy must be {n} non-negative probabilities, got {policy}")
    return [p / total for p in policy]


def gains(payoff: Matrix, policy: Sequence[float]) -> list[float]:
    """What each action gains on average against ``policy`` (action probabilities)."""
    n = check_game(payoff)
    x = _strategy(policy, n)
    return [sum(payoff[i][j] * x[j] for j in range(n)) for i in range(n)]


def exploitability(payoff: Matrix, policy: Sequence[float]) -> float:
    """The best response's gain against ``policy``: 0 at the equilibrium, more the more
    an opponent that knows the policy wins from it (the game's value is 0)."""
    return max(gains(payoff, policy))
