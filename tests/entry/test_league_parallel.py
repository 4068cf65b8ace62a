"""A league in the parallel pipeline (issue 41): the learner keeps the main player's side
(snapshots, table, draw sheet), its collectors seat their copies from the sheet and hand
each match's outcome back in their rollout files; a run interrupted and resumed has the
pool, table and ratings it had."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import torch
from helpers import processes_with, wait_for

from ding_lite.config.config import compile_config
from ding_lite.data.files import read_policy_sheet, write_policy
from ding_lite.league.book import MAIN, LeagueBook, check_parallel_league
from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.worker.collector.league_pool import SheetSeating
from ding_lite.worker.learner.league_desk import LeagueDesk

# Two collectors of 32 one-move games, 2 steps a rollout: 128 matches an iteration.
SHORT = [
    "env.num_envs=32",
    "policy.collect.n_steps=2",
    "policy.learn.batch_size=64",
    "league.snapshot_every=3",
    "system.heartbeat_period=0.2",
    "system.heartbeat_tolerance=3.0",
]


def _parallel(run, *args: str) -> subprocess.Popen:
    log = open(run.parent / f"{run.name}.out", "a")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "parallel", *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log.close()
    return proc


def _table(run) -> dict:
    return json.loads((run / "league" / "table.json").read_text())


def _status_league(run) -> dict:
    try:
        return json.loads((run / "status.json").read_text()).get("league") or {}
    except (OSError, ValueError):
        return {}


def _checkpoint_league(run) -> tuple[int, dict]:
    newest = max((run / "ckpt").glob("ckpt_iter*.pt"))
    ckpt = torch.load(newest, weights_only=True)
    return ckpt["train_iter"], ckpt["extra"]["league"]["league"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_parallel_league_plays_its_pool_and_resumes_with_the_same_table(tmp_path):
    run = tmp_path / "run"
    first = _parallel(
        run,
        "-c",
        "matrix_league_ppo",
        "--seed",
        "0",
        "--exp-dir",
        str(run),
        "--collectors",
        "2",
        "--max-train-iter",
        "200",
        *SHORT,
    )
    try:
        # Interrupted once the pool has three members and main has met them.
        assert wait_for(
            lambda: (run / "league" / "table.json").is_file() and len(_table(run)["pool"]) >= 3,
            120,
        ), (tmp_path / "run.out").read_text()[-3000:]
        # status.json's league section, read from the learner's table.
        assert wait_for(lambda: _status_league(run).get("pool", 0) >= 3, 10)
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=60) == 130
    finally:
        if first.poll() is None:
            first.kill()
    iteration, saved = _checkpoint_league(run)
    pool = saved["pool"]
    assert pool[:3] == ["main-000001", "main-000004", "main-000007"]
    assert sorted(p.stem for p in (run / "league").glob("main-*.pt")) >= sorted(pool)
    # Outcomes came back from the collectors: main met the pool, not only itself.
    assert saved["matches"] >= 128 * 3
    met = [n for a, b, n, _ in saved["table"]["pairs"] if MAIN in (a, b) and {a, b} & set(pool)]
    assert sum(met) > 0

    # Resumed to the iteration it stopped at: no iteration runs, and the table the
    # resumed learner took back is the one it saved.
    second = _parallel(
        run, "--resume", str(run), "--max-train-iter", str(iteration), "--collectors", "2"
    )
    assert second.wait(timeout=120) == 0, (tmp_path / "run.out").read_text()[-3000:]
    assert json.loads((run / "result.json").read_text())["train_iter"] == iteration
    table = _table(run)
    assert table["iteration"] == iteration
    assert table["pool"] == pool and table["matches"] == saved["matches"]
    assert table["table"] == saved["table"]  # ratings, win counts and games, exactly
    assert "league taken back at iteration" in (run / "logs" / "learner0.log").read_text()
    assert wait_for(lambda: not processes_with(f"--exp-dir {run}"), 10)


def test_the_sheet_is_the_matchmakers_draws(tmp_path):
    """What a remote collector draws from is what the serial league's matchmaker draws."""
    cfg = compile_config("matrix_league_ppo", ["league.shares={self: 0.3, pfsp: 0.5, check: 0.2}"])
    book = LeagueBook(cfg.league, seed=1)
    assert book.sheet() == {MAIN: 1.0}  # an empty pool: self-play
    for name in ("m1", "m2", "m3"):
        book.join(name, rating_of=MAIN)
    for outcome in (1.0, 1.0, -1.0):
        book.report(MAIN, "m1", outcome)
    sheet = book.sheet()
    assert sum(sheet.values()) == pytest.approx(1.0)
    drawn = book.pick(MAIN, 60_000)
    for name, p in sheet.items():
        assert drawn.count(name) / len(drawn) == pytest.approx(p, abs=0.01), name


def test_a_policy_file_carries_the_sheet_and_a_bad_one_is_refused(tmp_path):
    state = {"w": torch.zeros(2)}
    path = write_policy(tmp_path, 3, state, league_sheet={MAIN: 0.5, "main-000001": 0.5})
    assert read_policy_sheet(path)[2] == {MAIN: 0.5, "main-000001": 0.5}
    assert read_policy_sheet(write_policy(tmp_path, 4, state))[2] is None
    for bad in ({"../x": 1.0}, {MAIN: 0.4}, {MAIN: float("nan")}):
        path = write_policy(tmp_path, 5, state, league_sheet=bad)
        with pytest.raises(CheckpointError, match="malformed league sheet"):
            read_policy_sheet(path)


def test_the_learner_books_only_well_formed_matches_against_members(tmp_path, caplog):
    cfg = compile_config("matrix_league_ppo")
    desk = LeagueDesk(cfg, LeagueBook(cfg.league, seed=0), tmp_path, torch.nn.Linear(1, 3))
    desk.book.join("main-000001", rating_of=MAIN)
    assert desk.book_matches([["main-000001", 1.0], ["main-000001", -1], [MAIN, 0.0]], "f") == 3
    assert desk.book_matches([["nobody", 1.0], ["main-000001", 0.0]], "g") == 1
    for bad in ("x", [["main-000001"]], [["main-000001", 2.0]], [["main-000001", True]]):
        assert desk.book_matches(bad, "h") == 0
    assert desk.book.matches == 4
    assert desk.book.table.games(MAIN, "main-000001") == 3
    assert "unknown members ['nobody']" in caplog.text


def test_a_collector_seats_from_the_sheet_and_keeps_the_outcomes(tmp_path):
    seating = SheetSeating(tmp_path, torch.nn.Linear(1, 3), seed=0)
    assert set(seating.pick(50)) == {MAIN}  # no sheet yet: self-play
    seating.follow({"main-000001": 1.0})
    assert set(seating.pick(50)) == {"main-000001"}
    seating.report("main-000001", 1)
    seating.report(MAIN, 0)
    assert seating.drain() == [["main-000001", 1.0], [MAIN, 0.0]]
    assert seating.drain() == []
    with pytest.raises(CheckpointError, match="league member 'main-000001'"):
        seating.opponent("main-000001")  # no file in the folder


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("league.main_exploiters=1", "exploiters train in the serial pipeline only"),
        ("system.data_plane=http", "needs system.data_plane=files"),
        ("league.mirror=true", "league.mirror \\(mirror copies\\) runs in the serial"),
    ],
)
def test_what_a_parallel_league_cannot_do_is_one_line(override, message):
    cfg = compile_config("matrix_league_ppo", [override])
    with pytest.raises(ConfigError, match=message):
        check_parallel_league(cfg)
