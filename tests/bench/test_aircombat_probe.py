"""bench/aircombat_probe.py: each probe plays whole matches from a real (tiny) self-play
checkpoint, and bad arguments are one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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
