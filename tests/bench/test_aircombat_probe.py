"""bench/aircombat_probe.py: each probe plays whole matches from a real (tiny) self-play
checkpoint, and bad arguments are one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from helpers import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "aircombat_probe.py"


bench = load_bench("aircombat_probe")


def _shares(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"(\d+\.\d)%", line)]


def test_self_reports_blue_red_and_draws(selfplay_run, capsys):
    assert bench.main(["self", str(selfplay_run), "--episodes", "16"]) == 0
    line = capsys.readouterr().out.strip()
    assert "against itself: blue" in line and "(16 episodes)" in line
    assert sum(_shares(line)) == pytest.approx(100.0, abs=0.15)


def test_mix_and_hold_play_crank_agent(selfplay_run, capsys):
    run = str(selfplay_run)
    assert bench.main(["mix", run, run, "--episodes", "16"]) == 0
    line = capsys.readouterr().out.strip()
    assert "against CrankAgent: win" in line
    assert sum(_shares(line)) == pytest.approx(100.0, abs=0.15)
    # A policy that may never fire cannot win.
    assert bench.main(["hold", run, "--max-km", "0", "--episodes", "16"]) == 0
    assert _shares(capsys.readouterr().out)[0] == 0.0


def test_bad_arguments_are_one_line_errors(selfplay_run, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["mix", str(selfplay_run)])
    assert exc.value.code == 2
    assert "'mix' takes two runs" in capsys.readouterr().err
    assert bench.main(["self", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


def test_launches_reports_each_outcome(selfplay_run, capsys):
    assert bench.main(["launches", str(selfplay_run), "--episodes", "16"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "against CrankAgent: win" in lines[0] and len(lines) == 4
    shares = _shares(lines[0])
    matches = [int(m) for m in re.findall(r"(\d+) matches;", "\n".join(lines[1:]))]
    # Every outcome with a share has its line, and the lines count every match.
    assert sum(matches) == sum(round(16 * x / 100) for x in shares if x) == 16


def test_launch_report_counts_ranges_per_outcome():
    nan = float("nan")
    # Two matches, four steps: P1 fires at 40 then 30 km and wins the first, at 35 km and
    # loses the second; CrankAgent fires once in each, at 31 km.
    ranges = torch.tensor(
        [
            [[nan, nan], [nan, nan]],
            [[40.0, nan], [35.0, nan]],
            [[nan, 31.0], [nan, 31.0]],
            [[30.0, nan], [nan, nan]],
        ]
    )
    outcome, length = torch.tensor([1.0, -1.0]), torch.tensor([4.0, 3.0])
    won, lost, drawn = bench.launch_report(outcome, ranges, length)
    assert won == "  won: 1 matches; P1 fired 2.00 a match at 35.0 km (first 40.0 km), " + (
        "CrankAgent 1.00 at 31.0 km; 4 s"
    )
    assert lost.startswith(" lost: 1 matches; P1 fired 1.00 a match at 35.0 km (first 35.0 km)")
    assert drawn == "drawn: no matches"


def test_a_policy_observing_the_missiles_gets_them(league_run, selfplay_run, capsys):
    # aircombat_league_ppo observes the missiles and stock: the probe's env gives them.
    assert bench.main(["launches", str(league_run), "--episodes", "8"]) == 0
    assert "(8 episodes)" in capsys.readouterr().out
    assert bench.main(["mix", str(league_run), str(selfplay_run), "--episodes", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: observations of [(10,), (15,)] do not fit one env"


def test_duel_plays_another_policy_on_the_leading_features(league_run, selfplay_run, capsys):
    league, blind = str(league_run), str(selfplay_run)
    assert bench.main(["duel", league, blind, "--episodes", "16"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert f"{league} against {blind}: win" in lines[0] and len(lines) == 4
    assert sum(_shares(lines[0])) == pytest.approx(100.0, abs=0.15)
    matches = [int(m) for m in re.findall(r"(\d+) matches;", "\n".join(lines[1:]))]
    assert sum(matches) == 16 and all(", P2 " in line for line in lines[1:] if "matches;" in line)
    # The policy that sees more must fly P1: it reads features the other's env lacks.
    assert bench.main(["duel", blind, league, "--episodes", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {league} observes [15], more than {blind}'s [10]: " + (
        "give the larger observation's run first"
    )
