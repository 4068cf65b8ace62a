"""The league of a run: players, the pool's snapshot files, seats and a state that resumes."""

from __future__ import annotations

import pytest
import torch
from easydict import EasyDict

from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.envs.spaces import Discrete
from ding_lite.league.table import LeagueError
from ding_lite.model import build_model
from ding_lite.utils.errors import CheckpointError
from ding_lite.worker.collector.league_pool import MAIN, League


def _model(seed: int = 0):
    torch.manual_seed(seed)
    return build_model((1,), Discrete(3), hidden_sizes=[8])


def _league(tmp_path, **changes) -> League:
    cfg = EasyDict({**DEFAULT_CONFIG["league"], **changes})
    return League(cfg, tmp_path / "league", _model(), seed=0)


def test_a_snapshot_joins_as_a_file_and_plays_as_it_was_frozen(tmp_path):
    league = _league(tmp_path)
    frozen = league.main_model.state_dict()
    frozen = {k: v.clone() for k, v in frozen.items()}
    league.admit("main-000005", league.main_model, rating_of=MAIN)
    assert (tmp_path / "league" / "main-000005.pt").is_file()
    with torch.no_grad():  # the live model learns on; the member stays as it joined
        for p in league.main_model.parameters():
            p.add_(1.0)
    member = league.opponent("main-000005").model
    assert all(torch.equal(member.state_dict()[k], frozen[k]) for k in frozen)
    assert league.opponent(MAIN).model is league.main_model  # self-play: the live one
    assert league.table.members == [MAIN, "main-000005"]


def test_main_meets_the_pool_and_exploiters_meet_main(tmp_path):
    league = _league(tmp_path, shares={"self": 0.0, "pfsp": 1.0, "check": 0.0})
    assert league.pick(MAIN, 3) == [MAIN] * 3  # an empty pool: self-play
    league.admit("main-000001", league.main_model, rating_of=MAIN)
    assert league.pick(MAIN, 3) == ["main-000001"] * 3
    league.add_player("main_exploiter0-g0", "main_exploiter", _model(1))
    league.add_player("league_exploiter1-g0", "league_exploiter", _model(2))
    assert league.pick("main_exploiter0-g0", 2) == [MAIN, MAIN]
    assert league.pick("league_exploiter1-g0", 2) == ["main-000001"] * 2


def test_matches_move_the_table_and_the_recent_score(tmp_path):
    league = _league(tmp_path)
    league.admit("main-000001", league.main_model, rating_of=MAIN)
    league.report(MAIN, "main-000001", 1.0)
    league.report(MAIN, "main-000001", -1.0)
    league.report(MAIN, "main-000001", 0.0)
    league.report(MAIN, MAIN, 1.0)  # self-play: counted, but no table entry moves
    assert league.matches == 4
    assert league.table.games(MAIN, "main-000001") == 3
    assert league.recent_score(MAIN) == pytest.approx(0.5)


def test_a_damaged_or_foreign_member_file_is_one_line(tmp_path):
    league = _league(tmp_path)
    league.admit("main-000001", league.main_model, rating_of=MAIN)
    path = tmp_path / "league" / "main-000001.pt"
    path.write_bytes(b"not a zip")
    with pytest.raises(
        CheckpointError,
        match="league member .main-000001.: cannot read checkpoint .*not a torch tensor file",
    ) as err:
        league.opponent("main-000001")
    assert "\n" not in str(err.value)
    torch.save({"league_member": "someone-else", "model": {}}, path)
    with pytest.raises(CheckpointError, match="is not the league member 'main-000001'"):
        league.opponent("main-000001")
    torch.save({"league_member": "main-000001", "model": {"w": torch.zeros(2)}}, path)
    with pytest.raises(CheckpointError, match="does not fit the model"):
        league.opponent("main-000001")
    with pytest.raises(LeagueError, match="not a member"):
        league.opponent("nobody")


def test_state_resumes_exactly_and_a_renamed_player_keeps_its_place(tmp_path):
    league = _league(tmp_path)
    league.add_player("main_exploiter0-g0", "main_exploiter", _model(1))
    league.admit("main-000001", league.main_model, rating_of=MAIN)
    league.report(MAIN, "main-000001", 1.0)
    league.report("main_exploiter0-g0", MAIN, 1.0)
    league.rename_player("main_exploiter0-g0", "main_exploiter0-g1")
    assert list(league.players) == [MAIN, "main_exploiter0-g1"]
    league.pick(MAIN, 5)
    state = league.state_dict()

    fresh = _league(tmp_path)
    fresh.add_player("main_exploiter0-g0", "main_exploiter", _model(1))
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    assert fresh.pick(MAIN, 20) == league.pick(MAIN, 20)  # the same draws from here on
    assert list(fresh.players) == [MAIN, "main_exploiter0-g1"]


@pytest.mark.parametrize(
    "damage,match",
    [
        (lambda s: s.pop("table"), "not a league state"),
        (lambda s: s.update(pool=["ghost"]), "pool names members"),
        (lambda s: s.update(players={MAIN: "main"}), "do not fit this run's roles"),
        (lambda s: s["matchmaker"].update(rng="x"), "matchmaker"),
    ],
)
def test_a_state_that_does_not_fit_is_refused_whole(tmp_path, damage, match):
    league = _league(tmp_path)
    league.add_player("main_exploiter0-g0", "main_exploiter", _model(1))
    league.admit("main-000001", league.main_model, rating_of=MAIN)
    before = league.state_dict()
    state = league.state_dict()
    damage(state)
    with pytest.raises(LeagueError, match=match):
        league.load_state_dict(state)
    assert league.state_dict() == before
