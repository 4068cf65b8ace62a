"""bench/league_aircombat.py: a finished league run is played against CrankAgent and head
to head, its figures recorded and summed up; a bad opponent is a one-line error."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import load_bench

bench = load_bench("league_aircombat")


def test_a_finished_run_is_played_and_recorded(league_run, selfplay_run, tmp_path, capsys):
    runs = tmp_path / "runs"
    run = runs / bench.run_name(0, bench.config_digest([]))
    shutil.copytree(league_run, run)
    results = tmp_path / "results.jsonl"
    argv = ["--seeds", "0", "--runs", str(runs), "--episodes", "8", "--results", str(results)]
    argv += ["--opponent", f"selfplay={selfplay_run}"]
    bench.main(argv)
    out = capsys.readouterr().out
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert record["seed"] == 0 and record["envstep"] > 0
    assert set(record["matches"]) == {"crank", "selfplay"}
    for shares in record["matches"].values():
        assert sum(shares) == pytest.approx(100.0, abs=0.15)
    assert "seed   0  crank" in out and "against selfplay" in out
    # Recorded: a second call replays nothing and prints the same figures.
    shutil.rmtree(run / "ckpt")
    bench.main(argv)
    again = capsys.readouterr().out
    assert "failed" not in again and "against crank" in again


def test_each_config_trains_its_own_runs():
    bundled = bench.config_digest([])
    assert bench.run_name(3, bundled) == f"league_seed3_{bundled}"
    # The resolved config names the runs: an override that changes nothing keeps them, a
    # change (of the overrides, or of the bundled settings) gets runs of its own.
    assert bench.config_digest(["league.mirror=true"]) == bundled
    assert bench.config_digest(["league.mirror=false"]) != bundled
    assert len({bundled, bench.config_digest(["max_env_step=100"])}) == 2


def test_a_bad_override_is_a_one_line_error(capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["league.nonsense=1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "league.nonsense" in err


def test_an_opponent_without_a_policy_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["--opponent", f"x={tmp_path}"])
    assert exc.value.code == 2
    assert "has no ckpt/best.pt" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--opponent", "no-name"])
    assert "expected NAME=RUN_DIR" in capsys.readouterr().err


def test_benches_recording_at_once_keep_each_others_runs(tmp_path):
    results = load_bench("results")
    path = tmp_path / "r.jsonl"
    first = results.ResultsFile(path, lambda r: r["seed"], lambda r: None)
    second = results.ResultsFile(path, lambda r: r["seed"], lambda r: None)
    first.record({"seed": 1, "x": 1})
    second.record({"seed": 2, "x": 2})
    second.record({"seed": 1, "x": 3})  # a rerun replaces its seed's line
    second.record({"seed": 3, "error": "failed"})  # a failure is shown, not kept
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted((r["seed"], r["x"]) for r in lines) == [(1, 3), (2, 2)]
    assert [p.name for p in tmp_path.iterdir()] == ["r.jsonl"]
