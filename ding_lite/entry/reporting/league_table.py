"""The league's table as a run shows it: ``<run dir>/league/table.json`` (written after each
iteration) and ``ding-lite league RUN_DIR``, which prints the members by rating, each one's
games and score against the main player, and the win-rate matrix of the strongest.

The file is read as data and checked whole (the table's own checks,
:meth:`~ding_lite.league.LeagueTable.from_state`): a damaged file is one line, never a
traceback.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ding_lite.league import LeagueTable
from ding_lite.league.book import MAIN, TABLE_FILE
from ding_lite.league.table import LeagueError
from ding_lite.utils.errors import DingLiteError

MAX_TABLE_BYTES = 16 * 1024 * 1024


class LeagueFileError(DingLiteError):
    """A league table file that is missing or does not read as one (one line)."""


def read_league_table(run_dir: str | Path) -> tuple[dict[str, Any], LeagueTable]:
    """``(the document, its table)`` of a run's ``league/table.json``.

    Raises:
        LeagueFileError: the run has no league table, or it does not read as one.
    """
    path = Path(run_dir) / "league" / TABLE_FILE
    if not path.is_file():
        raise LeagueFileError(f"{run_dir} has no league table ({path}): not a league run yet")
    try:
        if path.stat().st_size > MAX_TABLE_BYTES:
            raise ValueError(f"larger than {MAX_TABLE_BYTES} bytes")
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        table = LeagueTable.from_state(doc.get("table"))
        _check(doc, table)
    except (OSError, ValueError, LeagueError) as err:  # JSONDecodeError is a ValueError
        raise LeagueFileError(f"{path} is not a league table: {_first_line(err)}") from None
    return doc, table


def _check(doc: dict[str, Any], table: LeagueTable) -> None:
    iteration, pool, players = doc.get("iteration"), doc.get("pool"), doc.get("players")
    if not (isinstance(iteration, int) and not isinstance(iteration, bool) and iteration >= 0):
        raise ValueError("iteration is not a count")
    known = set(table.members)
    active = doc.get("active", pool)
    for names in (pool, active):
        if not (isinstance(names, list) and all(isinstance(m, str) and m in known for m in names)):
            raise ValueError("the pool names members the table does not know")
    if not (isinstance(players, dict) and all(p in known for p in players)):
        raise ValueError("the players are not in the table")
    matches = doc.get("matches", 0)
    if not (isinstance(matches, int) and not isinstance(matches, bool) and matches >= 0):
        raise ValueError("matches is not a count")
    gap = doc.get("exploitability")
    if gap is not None and not (isinstance(gap, int | float) and math.isfinite(gap)):
        raise ValueError("exploitability is not a number")


def league_status(league: Any, gap: float | None, top: int = 8) -> dict[str, Any]:
    """status.json's ``league`` section: counts and the ``top`` members by rating (the
    main player always among them)."""
    table, players, pool = league.table, league.players, league.active_pool
    ranked = sorted(table.members, key=lambda m: -table.ratings[m])[:top]
    if MAIN not in ranked:
        ranked = sorted([*ranked[: top - 1], MAIN], key=lambda m: -table.ratings[m])
    return {
        "pool": len(league.pool),
        "players": len(players),
        "matches": league.matches,
        "exploitability": gap,
        "top": [
            {
                "name": name,
                "kind": _kind(name, players, pool),
                "rating": round(table.ratings[name], 1),
                "games": sum(table.games(name, other) for other in table.members if other != name),
                "main_score": None if name == MAIN else round(table.win_rate(MAIN, name), 4),
            }
            for name in ranked
        ],
    }


def league_status_of_run(run_dir: str | Path) -> dict[str, Any] | None:
    """status.json's ``league`` section from the run's ``league/table.json`` (a parallel
    run's learner writes it); None while there is none, or while it does not read."""
    try:
        doc, table = read_league_table(run_dir)
    except LeagueFileError:
        return None
    book = SimpleNamespace(
        table=table,
        players=doc["players"],
        pool=doc["pool"],
        active_pool=doc.get("active", doc["pool"]),
        matches=doc.get("matches", 0),
    )
    return league_status(book, doc.get("exploitability"))


def _kind(name: str, players: Any, pool: Any) -> str:
    return "player" if name in players else "pool" if name in pool else "retired"


def format_league(doc: dict[str, Any], table: LeagueTable, top: int = 8) -> str:
    """The text ``ding-lite league`` prints."""
    players, pool = doc["players"], doc.get("active", doc["pool"])
    lines = [
        f"league after iteration {doc['iteration']}: {len(doc['pool'])} pool member(s) "
        f"({len(pool)} playing), "
        f"{len(players)} player(s), {doc.get('matches', 0)} match(es)"
    ]
    if doc.get("exploitability") is not None:
        lines.append(f"main policy's exploitability: {doc['exploitability']:.4f}")
    ranked = sorted(table.members, key=lambda m: -table.ratings[m])
    lines.append(
        f"{'#':>3} {'member':<36} {'kind':<8} {'rating':>7} {'games':>7} {'main scores':>11}"
    )
    for rank, name in enumerate(ranked, 1):
        kind = _kind(name, players, pool)
        games = sum(table.games(name, other) for other in table.members if other != name)
        against = "-" if name == MAIN else f"{table.win_rate(MAIN, name):.2f}"
        lines.append(
            f"{rank:>3} {name:<36} {kind:<8} {table.ratings[name]:>7.0f} {games:>7.0f} "
            f"{against:>11}"
        )
    shown = ranked[:top]
    lines += ["", f"win rates of #1-#{len(shown)} (row against column):"]
    lines.append("    " + "".join(f"{f'#{c}':>6}" for c in range(1, len(shown) + 1)))
    for r, row in enumerate(shown, 1):
        cells = ["-" if row == col else f"{table.win_rate(row, col):.2f}" for col in shown]
        lines.append(f"{f'#{r}':>3} " + "".join(f"{c:>6}" for c in cells))
    return "\n".join(lines)


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
