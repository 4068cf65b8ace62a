"""Who meets whom: PFSP's weights, the shares of each kind of match, a resumed generator,
admission to the pool, and the exact figures of a matrix game."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ding_lite.league import LeagueTable, Matchmaker, pfsp_weights
from ding_lite.league.matchmaking import admitted
from ding_lite.league.matrix import exploitability, gains
from ding_lite.league.table import LeagueError

# Rock, paper, scissors where a win with rock pays 2: the equilibrium is (1/4, 1/2, 1/4).
BIASED_RPS = [[0, -1, 2], [1, 0, -1], [-2, 1, 0]]


def test_pfsp_weights_favour_the_members_that_still_win():
    assert pfsp_weights([0.0, 0.5, 1.0], "squared") == pytest.approx([0.8, 0.2, 0.0])
    assert pfsp_weights([0.0, 0.5, 1.0], "variance") == pytest.approx([0.0, 1.0, 0.0])
    assert pfsp_weights([0.2, 0.9], "even") == pytest.approx([0.5, 0.5])
    assert pfsp_weights([1.0, 1.0], "squared") == pytest.approx([0.5, 0.5])  # beats all
    with pytest.raises(LeagueError, match="unknown PFSP weighting 'cubic'"):
        pfsp_weights([0.5], "cubic")


def _league() -> LeagueTable:
    table = LeagueTable()
    for name in ("main", "old", "strong"):
        table.add(name)
    for _ in range(30):
        table.record("main", "old", 1.0)  # main beats old, loses to strong
        table.record("main", "strong", 0.0)
    return table


def test_matches_come_in_their_shares_and_pfsp_meets_who_still_wins():
    maker = Matchmaker(_league(), seed=1)
    draws = [maker.opponent("main", ["main", "old", "strong"]) for _ in range(4000)]
    kinds = Counter(kind for _, kind in draws)
    assert kinds["self"] / 4000 == pytest.approx(0.35, abs=0.03)
    assert kinds["pfsp"] / 4000 == pytest.approx(0.5, abs=0.03)
    pfsp = Counter(who for who, kind in draws if kind == "pfsp")
    assert pfsp["strong"] > 20 * max(pfsp["old"], 1)  # (1-x)^2: 0.9 against 0.0006
    checks = Counter(who for who, kind in draws if kind == "check")
    assert checks["old"] == pytest.approx(checks["strong"], rel=0.3)  # checks are uniform
    assert Matchmaker(_league(), seed=1).opponent("main", []) == ("main", "self")


def test_a_resumed_matchmaker_draws_what_an_unbroken_one_would():
    pool = ["main", "old", "strong"]
    unbroken, first = Matchmaker(_league(), seed=7), Matchmaker(_league(), seed=7)
    for _ in range(50):
        first.opponent("main", pool)
    resumed = Matchmaker(_league(), seed=0)
    resumed.load_state(json.loads(json.dumps(first.state())))
    expected = [unbroken.opponent("main", pool) for _ in range(150)][50:]
    assert [resumed.opponent("main", pool) for _ in range(100)] == expected
    with pytest.raises(LeagueError, match="not a matchmaker's state"):
        resumed.load_state({"rng": [3, ["x"], None]})


@pytest.mark.parametrize(
    "shares", [{}, {"exploit": 1.0}, {"self": -1.0}, {"self": 0.0, "pfsp": 0.0}]
)
def test_bad_shares_are_one_line(shares):
    with pytest.raises(LeagueError, match="shares"):
        Matchmaker(_league(), shares=shares)


def test_a_snapshot_joins_on_schedule_or_once_it_beats_the_pool():
    assert admitted(5, 0, every=10, win_rates=[], beat=0.7)  # the first one
    assert not admitted(5, 0, every=10, win_rates=[0.9, 0.6], beat=0.7)
    assert admitted(10, 0, every=10, win_rates=[0.1], beat=0.7)
    assert admitted(3, 0, every=None, win_rates=[0.75, 0.8], beat=0.7)


def test_exploitability_is_zero_at_the_equilibrium_only():
    assert exploitability(BIASED_RPS, [0.25, 0.5, 0.25]) == pytest.approx(0.0)
    assert gains(BIASED_RPS, [1, 1, 1]) == pytest.approx([1 / 3, 0.0, -1 / 3])
    assert exploitability(BIASED_RPS, [1, 0, 0]) == pytest.approx(1.0)  # paper beats it
    with pytest.raises(LeagueError, match="zero-sum symmetric"):
        exploitability([[0, 1], [1, 0]], [0.5, 0.5])


def test_recency_weighs_the_newest_members_more_and_a_bad_one_is_refused():
    assert pfsp_weights([0.5, 0.5, 0.5], "even", recency=1.0) == pytest.approx(
        [1 / 6, 2 / 6, 3 / 6]
    )
    assert pfsp_weights([0.5, 0.5], "even", recency=0.0) == pytest.approx([0.5, 0.5])
    # Win rates still count: a member main always beats weighs 0 under ``squared``.
    assert pfsp_weights([1.0, 0.0], "squared", recency=2.0) == pytest.approx([0.0, 1.0])
    for bad in (-1.0, 17.0, "1"):
        with pytest.raises(LeagueError, match="league.recency"):
            pfsp_weights([0.5], "even", recency=bad)
