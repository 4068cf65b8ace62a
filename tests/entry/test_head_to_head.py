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
from ding_lite.entry.trained.predict import load_policy
from ding_lite.worker.collector.league_pool import PolicyOpponent

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


def test_air_combat_policies_of_a_smaller_observation(league_run, selfplay_run, capsys):
    # aircombat_league_ppo observes the missiles and stock (15 features), self-play the 10 that lead
    # them: as the opponent, the self-play policy reads those; as P1 it cannot play the
    # league's policy, which needs features its env does not give.
    assert main(["eval", str(selfplay_run), "--against", str(league_run), *EPISODES]) == 2
    err = capsys.readouterr().err.strip()
    assert "its policy observes [15], this evaluation's env gives [10]" in err
    assert "\n" not in err
    model = load_policy(selfplay_run).model
    obs = torch.randn(64, 15)
    torch.manual_seed(0)
    sliced = PolicyOpponent(model, 10).act(obs)
    torch.manual_seed(0)
    assert torch.equal(sliced, PolicyOpponent(model).act(obs[:, :10]))


def test_cross_play_of_runs_with_different_observations(league_run, selfplay_run, capsys):
    assert main(["eval", "--cross", str(league_run), str(selfplay_run), *EPISODES]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    league_row, selfplay_row = lines[2].split(), lines[3].split()
    # The league's policy (14 features) plays the self-play one (10) as P1, not as P2.
    assert "n/a" not in league_row
    assert sum(_shares_cell(league_row[2])) == pytest.approx(100, abs=0.15)
    assert selfplay_row[1] == "n/a" and selfplay_row[3] == "n/a"
    assert lines[4].startswith("n/a: the column's policy observes more")


def _shares_cell(cell: str) -> list[float]:
    return [float(v) for v in cell.split("/")]
