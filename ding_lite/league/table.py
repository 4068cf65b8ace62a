"""The league table: every match's outcome, a win rate per pair and an Elo rating each.

A match is two members and an outcome from the first one's side: 1 a win, 0.5 a draw, 0 a
loss. The table keeps the games and points of each ordered pair (``a`` against ``b`` and
``b`` against ``a`` are the same games seen from both sides) and updates both members'
Elo ratings. Its state is a plain dict (:meth:`LeagueTable.state`), saved in checkpoints
and taken back by :meth:`LeagueTable.from_state`, which trusts none of it: a state that
does not fit is refused whole with one line naming what is wrong.
"""

from __future__ import annotations

import math
import re
from typing import Any

INITIAL_RATING = 1000.0
ELO_K = 16.0  # the largest change one match makes to a rating
ELO_SCALE = 400.0  # a difference of this many points: the stronger wins 10 times as often
PRIOR_GAMES = 1.0  # a pair's win rate starts at 0.5 as if this many games were drawn
_NAME_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
MAX_GAMES = 2**53 - 1


class LeagueError(ValueError):
    """A league state or a match that does not fit (one line, naming what is wrong)."""


def expected_score(rating: float, other: float) -> float:
    """The score Elo expects of a player rated ``rating`` against one rated ``other``."""
    return 1.0 / (1.0 + 10.0 ** ((other - rating) / ELO_SCALE))


class LeagueTable:
    """The members, their ratings and the outcomes of their matches.

    Args:
        k: Elo's K factor (the largest change one match makes to a rating).
    """

    def __init__(self, k: float = ELO_K) -> None:
        if not (isinstance(k, int | float) and 0 < k <= 400):
            raise LeagueError(f"the Elo K factor must be in (0, 400], got {k!r}")
        self.k = float(k)
        self.ratings: dict[str, float] = {}
        self._games: dict[tuple[str, str], float] = {}  # ordered pair -> games played
        self._points: dict[tuple[str, str], float] = {}  # ordered pair -> the first's points

    # --- members -------------------------------------------------------------------------
    def add(self, name: str, rating: float | None = None) -> None:
        """Adds a member (rated as the best member so far, or :data:`INITIAL_RATING` in an
        empty league, unless ``rating`` says otherwise); a known name changes nothing."""
        _check_name(name)
        if name in self.ratings:
            return
        if rating is None:
            rating = max(self.ratings.values(), default=INITIAL_RATING)
        self.ratings[name] = float(rating)

    @property
    def members(self) -> list[str]:
        """The members, in the order they joined."""
        return list(self.ratings)

    # --- matches -------------------------------------------------------------------------
    def record(self, a: str, b: str, score: float, games: float = 1.0) -> None:
        """Books ``games`` matches of ``a`` against ``b`` in which ``a`` scored ``score``
        on average (1 win, 0.5 draw, 0 loss), and moves both Elo ratings.

        Raises:
            LeagueError: an unknown member, a member against itself, or a score outside
                [0, 1].
        """
        for name in (a, b):
            if name not in self.ratings:
                raise LeagueError(f"{name!r} is not a member of the league")
        if a == b:
            raise LeagueError(f"{a!r} cannot play itself in the table")
        if not (_finite(score) and 0.0 <= score <= 1.0):
            raise LeagueError(f"a match score must be in [0, 1], got {score!r}")
        if not (_finite(games) and games > 0):
            raise LeagueError(f"games must be a positive number, got {games!r}")
        for first, second, points in ((a, b, score), (b, a, 1.0 - score)):
            self._games[first, second] = self._games.get((first, second), 0.0) + games
            self._points[first, second] = self._points.get((first, second), 0.0) + points * games
        change = self.k * games * (score - expected_score(self.ratings[a], self.ratings[b]))
        self.ratings[a] += change
        self.ratings[b] -= change

    def games(self, a: str, b: str) -> float:
        """Matches ``a`` and ``b`` played against each other."""
        return self._games.get((a, b), 0.0)

    def win_rate(self, a: str, b: str) -> float:
        """``a``'s mean score against ``b``, pulled toward 0.5 by :data:`PRIOR_GAMES`
        drawn games (0.5 before they met)."""
        games = self._games.get((a, b), 0.0)
        return (self._points.get((a, b), 0.0) + 0.5 * PRIOR_GAMES) / (games + PRIOR_GAMES)

    def matrix(self) -> list[list[float]]:
        """The win rate of each member (row) against each other (column), members in
        joining order; 0.5 on the diagonal."""
        names = self.members
        return [[0.5 if a == b else self.win_rate(a, b) for b in names] for a in names]

    # --- state ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The table as JSON values (for checkpoints and status.json)."""
        return {
            "k": self.k,
            "ratings": dict(self.ratings),
            "pairs": [
                [a, b, self._games[a, b], self._points[a, b]] for a, b in sorted(self._games)
            ],
        }

    @classmethod
    def from_state(cls, state: Any) -> LeagueTable:
        """The table :meth:`state` described, every value checked.

        Raises:
            LeagueError: the state does not fit (nothing of it is taken).
        """
        if not isinstance(state, dict) or set(state) != {"k", "ratings", "pairs"}:
            raise LeagueError("a league table must have exactly the keys k, ratings, pairs")
        table = cls(state["k"])
        ratings, pairs = state["ratings"], state["pairs"]
        if not isinstance(ratings, dict) or not isinstance(pairs, list):
            raise LeagueError("league ratings must be an object and pairs a list")
        for name, rating in ratings.items():
            if not (_finite(rating) and abs(rating) <= 1e6):
                raise LeagueError(f"the rating of {name!r} is not a number: {rating!r:.40}")
            table.add(name, rating)
        for pair in pairs:
            table._take_pair(pair)
        for (a, b), games in table._games.items():
            mirrored = table._points.get((b, a), math.nan) + table._points[a, b]
            if table._games.get((b, a)) != games or not math.isclose(mirrored, games):
                raise LeagueError(f"the games of {a!r} and {b!r} disagree from both sides")
        return table

    def _take_pair(self, pair: Any) -> None:
        if not (isinstance(pair, list) and len(pair) == 4):
            raise LeagueError(f"a pair must be [a, b, games, points], got {pair!r:.80}")
        a, b, games, points = pair
        if a not in self.ratings or b not in self.ratings or a == b:
            raise LeagueError(f"a pair of members that are not two members: {pair!r:.80}")
        if not (_finite(games) and 0 < games <= MAX_GAMES):
            raise LeagueError(f"the games of {a!r} against {b!r} are not a count: {games!r}")
        if not (_finite(points) and 0 <= points <= games):
            raise LeagueError(f"the points of {a!r} against {b!r} are out of range: {points!r}")
        if (a, b) in self._games:
            raise LeagueError(f"the pair {a!r}, {b!r} is listed twice")
        self._games[a, b], self._points[a, b] = float(games), float(points)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_name(name: Any) -> None:
    if not (isinstance(name, str) and _NAME_RE.fullmatch(name)):
        raise LeagueError(
            f"a league member's name must be 1-64 letters, digits, '.', '_', ':' or '-', "
            f"got {name!r:.80}"
        )
