"""The league table: outcomes, win rates, Elo ratings, and a state taken back exactly or
refused whole."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ding_lite.league.table import INITIAL_RATING, LeagueError, LeagueTable, expected_score

NAMES = ["main", "main:v10", "main:v20", "crank"]
MATCHES = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from([0.0, 0.5, 1.0])),
    max_size=40,
)


def _played(matches) -> LeagueTable:
    table = LeagueTable()
    for name in NAMES:
        table.add(name)
    for a, b, score in matches:
        if a != b:
            table.record(a, b, score)
    return table


def test_ratings_follow_the_outcomes_and_win_rates_start_even():
    table = _played([])
    assert table.ratings == dict.fromkeys(NAMES, INITIAL_RATING)
    assert table.win_rate("main", "crank") == 0.5  # never met
    for _ in range(20):
        table.record("main", "crank", 1.0)
    assert table.ratings["main"] > INITIAL_RATING > table.ratings["crank"]
    assert table.win_rate("main", "crank") == pytest.approx(20.5 / 21)
    assert table.win_rate("crank", "main") == pytest.approx(0.5 / 21)
    assert sum(table.ratings.values()) == pytest.approx(INITIAL_RATING * len(NAMES))
    assert expected_score(1400.0, 1000.0) == pytest.approx(10 / 11)
    table.add("main:v30")  # a new member joins at the best rating so far
    assert table.ratings["main:v30"] == max(table.ratings.values())


@settings(max_examples=60, deadline=None)
@given(MATCHES)
def test_the_state_round_trips_exactly_through_json(matches):
    table = _played(matches)
    back = LeagueTable.from_state(json.loads(json.dumps(table.state())))
    assert back.state() == table.state() and back.matrix() == table.matrix()
    for a in NAMES:
        for b in NAMES:
            assert math.isclose(table.win_rate(a, b) + table.win_rate(b, a), 1.0)


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda s: s.update(k=0), "K factor"),
        (lambda s: s["ratings"].update({"a/b": 1.0}), "name must be"),
        (lambda s: s["ratings"].update(main=math.inf), "not a number"),
        (lambda s: s["pairs"].append(["main", "ghost", 1, 1]), "not two members"),
        (lambda s: s["pairs"][0].__setitem__(3, 99), "out of range"),
        (lambda s: s["pairs"].pop(), "disagree from both sides"),
        (lambda s: s["pairs"].append(list(s["pairs"][0])), "listed twice"),
        (lambda s: s.pop("pairs"), "exactly the keys"),
    ],
)
def test_a_damaged_state_is_refused_in_one_line(damage, says):
    state = _played([("main", "crank", 1.0), ("main", "main:v10", 0.5)]).state()
    damaged = copy.deepcopy(state)
    damage(damaged)
    with pytest.raises(LeagueError, match=says) as refused:
        LeagueTable.from_state(damaged)
    assert "\n" not in str(refused.value)


def test_bad_matches_are_refused_and_change_nothing():
    table = _played([("main", "crank", 1.0)])
    before = table.state()
    for args in (("main", "ghost", 1.0), ("main", "main", 1.0), ("main", "crank", 1.5)):
        with pytest.raises(LeagueError):
            table.record(*args)
    assert table.state() == before
