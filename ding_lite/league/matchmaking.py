"""Who meets whom: self-play, fictitious self-play (FSP) and prioritized FSP (PFSP).

A player's next opponent is drawn from three kinds of match, in shares the config sets
(AlphaStar's main agents: about 35% self-play, 50% PFSP, 15% checks of old weaknesses):

- ``self``: the player's current self;
- ``pfsp``: a pool member drawn with weight ``f(x)``, ``x`` the player's win rate against
  it (the table's), ``f`` a weighting of :data:`WEIGHTINGS`: ``squared`` (1-x)^2 favours
  the members that still win, ``variance`` x(1-x) those that are even, ``linear`` 1-x, and
  ``even`` weighs all alike (plain FSP);
- ``check``: a pool member drawn uniformly, so that no old member is forgotten.

The draws come from the matchmaker's own seeded generator, whose state is saved with the
league so that a resumed run draws what an unbroken one would.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from ding_lite.league.table import LeagueError, LeagueTable

WEIGHTINGS: dict[str, Callable[[float], float]] = {
    "squared": lambda x: (1.0 - x) ** 2,
    "variance": lambda x: x * (1.0 - x),
    "linear": lambda x: 1.0 - x,
    "even": lambda x: 1.0,
}
KINDS = ("self", "pfsp", "check")


def pfsp_weights(
    win_rates: Sequence[float], weighting: str = "squared", recency: float = 0.0
) -> list[float]:
    """The probability of drawing each opponent, from the player's win rate against each
    (uniform where every weight is 0: a player that beats them all meets each alike),
    the k-th of them (in joining order) weighed ``k**recency`` times more."""
    if weighting not in WEIGHTINGS:
        raise LeagueError(f"unknown PFSP weighting {weighting!r}; one of {', '.join(WEIGHTINGS)}")
    if not (isinstance(recency, int | float) and 0.0 <= recency <= 16.0):
        raise LeagueError(f"league.recency must be a number in [0, 16], got {recency!r}")
    if not win_rates:
        return []
    ages = [float(k) ** recency for k in range(1, len(win_rates) + 1)]
    raw = [max(WEIGHTINGS[weighting](min(max(x, 0.0), 1.0)), 0.0) for x in win_rates]
    if sum(raw) <= 0:
        raw = [1.0] * len(raw)
    raw = [w * a for w, a in zip(raw, ages, strict=True)]
    total = sum(raw)
    return [w / total for w in raw]


class Matchmaker:
    """Draws each match's opponent for a player (see the module's description).

    Args:
        table: the league table (its win rates weigh PFSP).
        shares: the share of each kind of match, ``{"self": .35, "pfsp": .5, "check":
            .15}`` (normalized; a kind left out never comes).
        weighting: PFSP's weighting (a key of :data:`WEIGHTINGS`).
        seed: the generator's seed.
        recency: PFSP's weight of the k-th member is also multiplied by ``k**recency``.
    """

    def __init__(
        self,
        table: LeagueTable,
        shares: dict[str, float] | None = None,
        weighting: str = "squared",
        seed: int = 0,
        recency: float = 0.0,
    ) -> None:
        shares = {"self": 0.35, "pfsp": 0.5, "check": 0.15} if shares is None else shares
        unknown = set(shares) - set(KINDS)
        if unknown or not shares:
            raise LeagueError(f"match shares must name some of {', '.join(KINDS)}: {shares}")
        if any(not isinstance(v, int | float) or v < 0 for v in shares.values()):
            raise LeagueError(f"match shares must be non-negative numbers: {shares}")
        if sum(shares.values()) <= 0:
            raise LeagueError("match shares must not all be 0")
        pfsp_weights([0.5], weighting, recency)  # checks the name and the recency
        self.table, self.shares, self.weighting = table, dict(shares), weighting
        self.recency = recency
        self.rng = random.Random(seed)

    def opponent(self, player: str, pool: Sequence[str]) -> tuple[str, str]:
        """``(opponent, kind)`` of ``player``'s next match; ``pool`` holds the members it
        may meet besides itself (an empty pool: self-play)."""
        return self.opponents(player, pool, 1)[0]

    def opponents(self, player: str, pool: Sequence[str], count: int) -> list[tuple[str, str]]:
        """``count`` matches' ``(opponent, kind)`` at once (the PFSP weights are computed
        once for all of them)."""
        others = [m for m in pool if m != player]
        kinds = [k for k in KINDS if self.shares.get(k, 0.0) > 0]
        drawn = self.rng.choices(kinds, [self.shares[k] for k in kinds], k=count)
        if not others:
            return [(player, "self")] * count
        weights = None
        matches = []
        for kind in drawn:
            if kind == "self":
                matches.append((player, kind))
            elif kind == "check":
                matches.append((self.rng.choice(others), kind))
            else:
                if weights is None:
                    rates = [self.table.win_rate(player, m) for m in others]
                    weights = pfsp_weights(rates, self.weighting, self.recency)
                matches.append((self.rng.choices(others, weights)[0], kind))
        return matches

    def state(self) -> dict[str, Any]:
        """The generator's state as JSON values (the rest comes from the config)."""
        version, internal, gauss = self.rng.getstate()
        return {"rng": [version, list(internal), gauss]}

    def load_state(self, state: Any) -> None:
        """Takes back :meth:`state` (checked: a state that does not fit changes nothing)."""
        try:
            version, internal, gauss = state["rng"]
            checked = (int(version), tuple(int(v) for v in internal), gauss)
            probe = random.Random()
            probe.setstate(checked)
        except (KeyError, TypeError, ValueError) as err:
            raise LeagueError(f"not a matchmaker's state: {err}") from None
        self.rng = probe


def admitted(
    iteration: int, joined_at: int, every: int | None, win_rates: Sequence[float], beat: float
) -> bool:
    """Whether a player's snapshot joins the pool now: ``every`` iterations after the last
    one joined, or once it scores at least ``beat`` against every pool member
    (``win_rates``; an empty pool admits the first snapshot at once)."""
    if not win_rates:
        return True
    if every is not None and iteration - joined_at >= every:
        return True
    return min(win_rates) >= beat
