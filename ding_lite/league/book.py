"""The league's book: its players, its pool of frozen members, who meets whom and every
match's outcome, as names and numbers (no models, no files).

A *player* learns (``main``, the run's own policy; exploiters, policies of their own); a
*member* is anyone a player can meet: the pool's frozen snapshots and the ``main`` player
itself (self-play and the exploiters' matches). Who a player meets:

- ``main``: the :class:`~.matchmaking.Matchmaker`'s draw over the pool (self-play, PFSP,
  checks of old members);
- a ``main_exploiter``: always the current ``main``;
- a ``league_exploiter``: PFSP over the pool (the current ``main`` while it is empty).

The serial pipeline's league (:mod:`ding_lite.worker.collector.league_pool`) adds the
models to the names; the parallel pipeline's learner keeps a book and hands its collectors
a *draw sheet* (:meth:`LeagueBook.sheet`: each opponent's probability) with every policy.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

from ding_lite.league.matchmaking import KINDS, Matchmaker, pfsp_weights
from ding_lite.league.table import LeagueError, LeagueTable
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.file_io import atomic_write_text
from ding_lite.utils.paths import is_worker_id

MAIN = "main"
ROLES = ("main", "main_exploiter", "league_exploiter")
TABLE_FILE = "table.json"  # the table as the run shows it, in the league folder


def check_parallel_league(cfg: Any) -> None:
    """One-line errors for a league the parallel pipeline cannot run: its learner keeps the
    main player's side (no exploiters), and its collectors read the pool's files from the
    run dir (the files data plane).

    Raises:
        ConfigError: exploiters asked for, or the http data plane.
    """
    lc = cfg.league
    if not lc.enabled:
        return
    if lc.mirror:
        raise ConfigError(
            "league.mirror (mirror copies) runs in the serial pipeline only; a parallel "
            "league runs with league.mirror=false"
        )
    if lc.main_exploiters or lc.league_exploiters:
        raise ConfigError(
            "league exploiters train in the serial pipeline only; a parallel league runs "
            "with league.main_exploiters=0 and league.league_exploiters=0"
        )
    if cfg.system.data_plane != "files":
        raise ConfigError(
            "a parallel league's collectors read the pool from the run dir: it needs "
            "system.data_plane=files (a filesystem the learner and collectors share)"
        )


class LeagueBook:
    """Players, pool, matchmaking and table of one run (see the module's description).

    Args:
        cfg: the run's ``league`` config section.
        seed: the matchmaker's seed.
    """

    def __init__(self, cfg: Any, seed: int) -> None:
        self.cfg = cfg
        self.table = LeagueTable(cfg.elo_k)
        self.table.add(MAIN)
        self.matchmaker = self._matchmaker(self.table, self.main_shares(), seed)
        self._exploiter_draws = self._matchmaker(self.table, {"pfsp": 1.0}, seed + 1)
        #: Frozen members, in joining order.
        self.pool: list[str] = []
        #: Live players: name -> role.
        self.players: dict[str, str] = {MAIN: "main"}
        #: Each player's recent outcomes against non-self opponents (+1 / 0 / -1).
        self.recent: dict[str, deque[float]] = {MAIN: deque(maxlen=cfg.window)}
        self.matches = 0  # matches booked in all (self-play included)

    # --- players -----------------------------------------------------------------------
    def add_player(self, name: str, role: str) -> None:
        """A live player (an exploiter); its table entry starts as main's."""
        if role not in ROLES:
            raise LeagueError(f"unknown league role {role!r}; one of {', '.join(ROLES)}")
        self.table.add(name, self.table.ratings[MAIN])
        self.players[name] = role
        self.recent[name] = deque(maxlen=self.cfg.window)

    def rename_player(self, old: str, new: str) -> None:
        """A player's next generation (an exploiter after its reset) under a new name, in
        its place among the players (a saved league matches players by place)."""
        self.table.add(new, self.table.ratings[MAIN])
        self.players = renamed(self.players, old, new, self.players[old])
        self.recent = renamed(self.recent, old, new, deque(maxlen=self.cfg.window))

    def recent_score(self, player: str) -> float | None:
        """The player's mean score (1 win, 0.5 draw, 0 loss) over its recent matches."""
        recent = self.recent[player]
        if not recent:
            return None
        return sum((x + 1.0) / 2.0 for x in recent) / len(recent)

    # --- matches -------------------------------------------------------------------------
    def pick(self, player: str, count: int = 1) -> list[str]:
        """The opponents of ``player``'s next ``count`` matches (see the module's
        description)."""
        role = self.players[player]
        active = self.active_pool
        if role == "main_exploiter" or (role == "league_exploiter" and not active):
            return [MAIN] * count
        draws = self._exploiter_draws if role == "league_exploiter" else self.matchmaker
        return [name for name, _ in draws.opponents(player, active, count)]

    def sheet(self, player: str = MAIN) -> dict[str, float]:
        """Each opponent's probability in ``player``'s draws, as :meth:`pick` draws them:
        what a collector of another process draws its matches from."""
        active = [m for m in self.active_pool if m != player]
        role = self.players[player]
        if role == "main_exploiter" or not active:
            return {MAIN if role != "main" else player: 1.0}
        given = {"pfsp": 1.0} if role == "league_exploiter" else self.matchmaker.shares
        share = dict.fromkeys(KINDS, 0.0) | given
        total = sum(share[k] for k in KINDS)
        rates = [self.table.win_rate(player, m) for m in active]
        sheet = dict.fromkeys(active, 0.0)
        sheet[player] = share["self"] / total
        weights = pfsp_weights(rates, self.cfg.weighting, self.cfg.recency)
        for member, weight in zip(active, weights, strict=True):
            sheet[member] += weight * share["pfsp"] / total
            sheet[member] += share["check"] / total / len(active)
        return {name: p for name, p in sheet.items() if p > 0.0}

    @property
    def active_pool(self) -> list[str]:
        """The members drawn as opponents: the newest ``pool_limit`` (0: all)."""
        limit = self.cfg.pool_limit
        return self.pool[-limit:] if limit else list(self.pool)

    def report(self, player: str, opponent: str, outcome: float) -> None:
        """Books a match of ``player`` against ``opponent`` (``outcome`` from the player's
        side); self-play counts, but moves no table entry."""
        self.matches += 1
        if opponent == player:
            return
        outcome = min(max(outcome, -1.0), 1.0)
        self.table.record(player, opponent, (outcome + 1.0) / 2.0)
        self.recent[player].append(outcome)

    def join(self, name: str, rating_of: str) -> None:
        """``name`` joins the pool, rated as ``rating_of`` is now (its model is the
        caller's to keep)."""
        if not is_worker_id(name) or name in self.pool or name in self.players:
            raise LeagueError(f"cannot admit {name!r}: a bad or taken name")
        self.table.add(name, self.table.ratings[rating_of])
        self.pool.append(name)

    def main_shares(self) -> dict[str, float]:
        """The kinds of the main player's drawn matches: the config's shares, less
        self-play where mirror copies play it (``mirror``)."""
        shares = dict(self.cfg.shares)
        if self.cfg.mirror:
            shares.pop("self", None)
            if not any(shares.values()):  # every copy is a mirror copy: nothing is drawn
                shares = {"self": 1.0}
        return shares

    def _matchmaker(self, table: LeagueTable, shares: dict, seed: int = 0) -> Matchmaker:
        return Matchmaker(table, shares, self.cfg.weighting, seed, self.cfg.recency)

    # --- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Table, draws, pool, players and recent outcomes (plain values)."""
        return {
            "table": self.table.state(),
            "matchmaker": self.matchmaker.state(),
            "exploiter_draws": self._exploiter_draws.state(),
            "pool": list(self.pool),
            "players": dict(self.players),
            "recent": {name: list(values) for name, values in self.recent.items()},
            "matches": self.matches,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Takes back :meth:`state_dict`: checked whole, then applied (the players must be
        this league's roles in the saved order).

        Raises:
            LeagueError: the state does not fit this league (nothing is changed).
        """
        try:
            table = LeagueTable.from_state(state["table"])
            pool, players, recent = state["pool"], state["players"], state["recent"]
            matchmaker = self._matchmaker(table, self.main_shares())
            matchmaker.load_state(state["matchmaker"])
            draws = self._matchmaker(table, {"pfsp": 1.0})
            draws.load_state(state["exploiter_draws"])
            matches = int(state["matches"])
        except (KeyError, TypeError, ValueError) as err:
            raise LeagueError(f"not a league state: {err}") from None
        known = set(table.members)
        if not (isinstance(pool, list) and all(name in known for name in pool)):
            raise LeagueError("the league state's pool names members the table does not know")
        if not isinstance(players, dict) or [*players.values()] != [*self.players.values()]:
            raise LeagueError(
                f"the league state's players {players!r:.120} do not fit this run's roles"
            )
        if set(players) - known or set(recent) != set(players):
            raise LeagueError("the league state's players are not in its table")
        self.table, self.matchmaker, self._exploiter_draws = table, matchmaker, draws
        self.pool, self.players, self.matches = list(pool), dict(players), matches
        self.recent = {
            name: deque((float(x) for x in recent[name]), maxlen=self.cfg.window)
            for name in players
        }


def write_table(folder: Path, book: LeagueBook, iteration: int, gap: float | None) -> None:
    """Writes ``book``'s table after ``iteration`` as ``<folder>/table.json`` (atomically;
    read by ``ding-lite league`` and the live status)."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "iteration": iteration,
        "table": book.table.state(),
        "pool": list(book.pool),
        "active": list(book.active_pool),
        "players": dict(book.players),
        "matches": book.matches,
        "exploitability": gap,
    }
    atomic_write_text(json.dumps(doc, sort_keys=True) + "\n", folder / TABLE_FILE, durable=False)


def renamed(mapping: dict[str, Any], old: str, new: str, value: Any) -> dict[str, Any]:
    """``mapping`` with the key ``old`` replaced by ``new`` (holding ``value``), in place."""
    return {new if k == old else k: value if k == old else v for k, v in mapping.items()}
