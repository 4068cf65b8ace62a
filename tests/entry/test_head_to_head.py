"""``ding-lite eval --against`` and ``--cross``: a policy against another run's policy, a
league member or a scripted agent, on an env with two sides.

The matrix game makes the outcomes exact: each run's checkpoints are rewritten to play one
action (rock, paper or scissors) with certainty, so paper beats rock in every episode."""

from __future__ import annotations

import re
import shutil

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.data.files import write_member
from ding_lite.entry.cli.command import main

ROCK, PAPER, SCISSORS = 0, 1, 2
EPISODES = ["--episodes", "16"]


def _shares(text: str) -> list[float]:
    """win, loss, draw in % from ``ding-lite eval``'s outcome line."""
    found = re.search(r"win ([0-9.]+)% .*loss ([0-9.]+)% .*draw ([0-9.]+)%", text)
    assert found, text
    return [float(v) for v in found.groups()]


def _pure_model(model: dict[str, torch.Tensor], action: int) -> None:
    model["policy_head.weight"].zero_()
    model["policy_head.bias"].fill_(-30.0)
    model["policy_head.bias"][action] = 30.0


@pytest.fixture(scope="module")
def matrix_runs(tmp_path_factory):
    """Three one-iteration matrix_league_ppo run dirs playing rock, paper and scissors."""
    root = tmp_path_factory.mktemp("h2h")
    first = root / "first"
    over = ["env.num_envs=8", "policy.learn.batch_size=32"]
    serial_pipeline("matrix_league_ppo", max_train_iter=1, overrides=over, exp_dir=str(first))
    runs = {}
    for name, action in (("rock", ROCK), ("paper", PAPER), ("scissors", SCISSORS)):
        run = root / name
        shutil.copytree(first, run)
        for file in (run / "ckpt").glob("*.pt"):
            state = torch.load(file, weights_only=True)
            _pure_model(state["policy"]["model"], action)
            torch.save(state, file)
        runs[name] = run
    return runs


def test_a_run_against_another_runs_policy(matrix_runs, capsys):
    rock, paper = str(matrix_runs["rock"]), str(matrix_runs["paper"])
    assert main(["eval", rock, "--against", paper, *EPISODES]) == 0
    out = capsys.readouterr().out
    assert f"(iteration 1) against {paper}: return -1.00" in out
    assert _shares(out) == [0.0, 100.0, 0.0]
    assert main(["eval", paper, "--against", rock, *EPISODES]) == 0
    assert _shares(capsys.readouterr().out) == [100.0, 0.0, 0.0]
    # A ckpt/ folder or a checkpoint file names the same policy.
    assert main(["eval", paper, "--against", f"{rock}/ckpt/best.pt", *EPISODES]) == 0
    assert _shares(capsys.readouterr().out) == [100.0, 0.0, 0.0]


def test_a_run_against_a_member_of_its_league(matrix_runs, capsys):
    rock = matrix_runs["rock"]
    state = torch.load(matrix_runs["scissors"] / "ckpt" / "best.pt", weights_only=True)
    member = rock / "league" / "scissors-000001.pt"
    try:
        write_member(rock / "league", "scissors-000001", state["policy"]["model"])
        assert main(["eval", str(rock), "--against", "member:scissors-000001", *EPISODES]) == 0
        assert _shares(capsys.readouterr().out) == [100.0, 0.0, 0.0]
        # The run's own first snapshot was trained one iteration from scratch: it mixes.
        assert main(["eval", str(rock), "--against", "member:main-000001", *EPISODES]) == 0
        win, loss, draw = _shares(capsys.readouterr().out)
        assert win + loss + draw == pytest.approx(100.0) and draw < 100.0
    finally:
        member.unlink(missing_ok=True)


def test_cross_play_matrix(matrix_runs, capsys):
    runs = [str(matrix_runs[n]) for n in ("rock", "paper", "scissors")]
    assert main(["eval", "--cross", *runs, "--episodes", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("win / loss / draw % of the row's best.pt (P1)")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert rows["rock"] == ["0.0/0.0/100.0", "0.0/100.0/0.0", "100.0/0.0/0.0", "0.500"]
    assert rows["paper"] == ["100.0/0.0/0.0", "0.0/0.0/100.0", "0.0/100.0/0.0", "0.500"]
    assert rows["scissors"] == ["0.0/100.0/0.0", "100.0/0.0/0.0", "0.0/0.0/100.0", "0.500"]


def test_bad_opponents_are_one_line_errors(matrix_runs, selfplay_run, tmp_path, capsys):
    rock = str(matrix_runs["rock"])
    cases = [
        (["--against", "rule_based"], "env 'matrix_game' has no scripted opponents"),
        (["--against", "member:nobody"], "league member 'nobody'"),
        (["--against", "member:../../x"], "cannot name a league member"),
        (["--against", str(selfplay_run)], "trained on env 'aircombat'"),
        (["--cross", rock], "--cross needs two run dirs or more"),
    ]
    for args, message in cases:
        code = main(["eval", *(args if args[0] == "--cross" else [rock, *args]), *EPISODES])
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and "\n" not in err, (args, err)
    assert sorted(p.name for p in (matrix_runs["rock"] / "league").iterdir()) == [
        "main-000001.pt",
        "table.json",
    ]


def test_air_combat_against_a_run_and_a_scripted_agent(league_run, selfplay_run, capsys):
    for spec in (str(selfplay_run), "rule_based", "member:main-000001"):
        assert main(["eval", str(league_run), "--against", spec, "--episodes", "8"]) == 0
        out = capsys.readouterr().out
        assert f"against {spec}: return" in out
        assert sum(_shares(out)) == pytest.approx(100.0, abs=0.15)
