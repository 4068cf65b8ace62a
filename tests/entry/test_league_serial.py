"""A league in the serial pipeline: the main player, exploiters, the pool and a resume that
goes on as an unbroken run would (issue 41)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import read_tb_scalars

SHORT = [
    "env.num_envs=16",
    "policy.collect.n_steps=2",
    "policy.learn.batch_size=16",
    "league.snapshot_every=3",
    "league.exploiter_max_iters=4",
    "league.main_exploiters=1",
    "league.league_exploiters=1",
]


def params(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def _straight(tmp_path, seed: int, overrides: list[str], iterations: int):
    """An unbroken league run of ``iterations`` in ``tmp_path/straight``."""
    return serial_pipeline(
        "matrix_league_ppo",
        seed=seed,
        overrides=overrides,
        exp_dir=str(tmp_path / "straight"),
        max_train_iter=iterations,
        verbose=0,
    )


def _league_state(run, iteration: int) -> dict:
    ckpt = torch.load(run / "ckpt" / f"ckpt_iter{iteration:08d}.pt", weights_only=True)
    return ckpt["extra"]["league"]


def test_a_league_run_fills_its_pool_and_logs_the_league(tmp_path):
    run = tmp_path / "run"
    trained = serial_pipeline(
        "matrix_league_ppo", seed=0, overrides=SHORT, exp_dir=str(run), max_train_iter=9, verbose=0
    )
    assert trained.result["train_iter"] == 9
    state = _league_state(run, 9)["league"]
    # main's snapshots at iterations 1 (an empty pool admits at once), 4 and 7; each of the
    # two exploiters joined after its 4th and 8th iteration, and started over.
    pool = state["pool"]
    assert [m for m in pool if m.startswith("main-")] == [
        "main-000001",
        "main-000004",
        "main-000007",
    ]
    assert sorted(m for m in pool if "exploiter" in m) == [
        "league_exploiter1-g0-000004",
        "league_exploiter1-g1-000008",
        "main_exploiter0-g0-000004",
        "main_exploiter0-g1-000008",
    ]
    assert list(state["players"]) == ["main", "main_exploiter0-g2", "league_exploiter1-g2"]
    assert sorted(p.stem for p in (run / "league").glob("*.pt")) == sorted(pool)
    # The table: main, the pool, and each generation of each exploiter as it played live.
    assert state["matches"] > 0 and len(state["table"]["ratings"]) == 1 + len(pool) + 2 * 3
    (events,) = (run / "tb").glob("events*")
    scalars = read_tb_scalars(events)
    for tag in ("league/pool_size", "league/main_rating", "league/exploitability"):
        assert tag in scalars, sorted(scalars)
    assert scalars["league/pool_size"][-1][1] == len(pool)


@pytest.mark.parametrize("start", ["first", "main"])
def test_an_exploiter_starts_over_from_its_first_weights_or_the_main_players(tmp_path, start):
    """``league.exploiter_start``: after its 4th iteration each exploiter joins the pool and
    starts over, from the weights it was born with, or from the main player's of the moment
    (what iteration 4's checkpoint holds, the league having run after the update)."""
    over = [*SHORT, f"league.exploiter_start={start}"]
    serial_pipeline(
        "matrix_league_ppo", seed=0, overrides=over, exp_dir=str(tmp_path), max_train_iter=4
    )
    ckpt = torch.load(tmp_path / "ckpt" / "ckpt_iter00000004.pt", weights_only=True)
    main = ckpt["policy"]["model"]
    names = ("main_exploiter0", "league_exploiter1")
    for name, exploiter in zip(names, ckpt["extra"]["league"]["exploiters"], strict=True):
        assert (exploiter["generation"], exploiter["iters"]) == (1, 0)
        model = exploiter["policy"]["model"]
        assert all(torch.equal(model[k], main[k]) for k in main) == (start == "main")
        member = tmp_path / "league" / f"{name}-g0-000004.pt"  # its weights as it left
        trained = torch.load(member, weights_only=True)["model"]
        assert not all(torch.equal(model[k], trained[k]) for k in main)


def test_the_exploiters_envs_take_their_own_kwargs(tmp_path):
    """``league.exploiter_env_kwargs`` reach the exploiters' envs, and only theirs: a bad
    one is a one-line error before anything runs; a good one leaves the main player's env
    as the run's config has it."""
    from ding_lite.config import compile_config
    from ding_lite.entry.pipelines.league_serial import exploiter_config

    with pytest.raises(ConfigError, match="unknown payoff 'chess'") as err:
        serial_pipeline(
            "matrix_league_ppo",
            overrides=[*SHORT, "league.exploiter_env_kwargs.payoff=chess"],
            exp_dir=str(tmp_path / "run"),
            max_train_iter=1,
        )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run").exists()
    cfg = compile_config("matrix_league_ppo", ["league.exploiter_env_kwargs.payoff=rps"])
    assert exploiter_config(cfg).env.kwargs == {"payoff": "rps"}
    assert cfg.env.kwargs == {"payoff": "biased_rps"}
    trained = serial_pipeline(
        "matrix_league_ppo",
        overrides=[*SHORT, "league.exploiter_env_kwargs.payoff=rps"],
        exp_dir=str(tmp_path / "ok"),
        max_train_iter=2,
        verbose=0,
    )
    assert trained.result["train_iter"] == 2


def test_mirror_copies_learn_both_sides_of_the_self_play_share(tmp_path, monkeypatch):
    """``league.mirror``: the self-play share (half of matrix_league_ppo's matches) is
    played on 8 fixed copies of 16, whose agent 1 is learned from too: 24 rows a step; the
    other copies meet pool members only once there are any; env steps count the copies."""
    from ding_lite.config import compile_config
    from ding_lite.league.book import LeagueBook
    from ding_lite.worker.collector import SerialCollector

    rollouts, seats = [], []
    collect = SerialCollector.collect

    def spy(self):
        data = collect(self)
        if getattr(self.env, "mirrored", 0):
            rollouts.append(data["obs"].shape[0])
            seats.append(list(self.env.seats))
        return data

    monkeypatch.setattr(SerialCollector, "collect", spy)
    over = ["env.num_envs=16", "policy.collect.n_steps=2", "league.mirror=true"]
    trained = serial_pipeline(
        "matrix_league_ppo", overrides=over, exp_dir=str(tmp_path), max_train_iter=6, verbose=0
    )
    assert trained.result["envstep"] == 6 * 2 * 16
    assert rollouts == [2 * (16 + 8)] * 6
    # Copies 8-15 draw from the pool (main-000001 joins after iteration 1): never main.
    assert all(name != "main" for row in seats[1:] for name in row[8:])
    assert all(row[:8] == ["main"] * 8 for row in seats)
    book = LeagueBook(compile_config("matrix_league_ppo", ["league.mirror=true"]).league, 0)
    assert book.main_shares() == {"pfsp": 0.5, "check": 0.0}


def test_a_league_with_mirror_copies_resumes_as_an_unbroken_run(tmp_path):
    over = ["env.num_envs=16", "policy.collect.n_steps=2", "league.mirror=true"]
    run = tmp_path / "resumed"
    serial_pipeline("matrix_league_ppo", seed=3, overrides=over, exp_dir=str(run), max_train_iter=2)
    resumed = serial_pipeline(resume=str(run), max_train_iter=5, verbose=0)
    straight = _straight(tmp_path, 3, over, 5)
    assert torch.equal(params(straight.model), params(resumed.model))
    assert _league_state(tmp_path / "straight", 5) == _league_state(run, 5)


@pytest.mark.parametrize(
    "experiment,overrides,match",
    [
        ("cartpole_ppo", ["league.enabled=true"], "side\\); env 'cartpole' has 1"),
        ("matrix_league_ppo", ["league.snapshot_every=0"], "league.snapshot_every must be"),
        ("matrix_league_ppo", ["league.weighting=cubic"], "unknown PFSP weighting 'cubic'"),
        ("matrix_league_ppo", ["league.shares.self=-1"], "match shares must be non-negative"),
        ("matrix_league_ppo", ["league.exploiter_reset_score=2"], "must be in \\(0, 1\\]"),
        ("matrix_league_ppo", ["league.exploiter_start=best"], "one of first, main, got 'best'"),
        (
            "matrix_league_ppo",
            ["league.mirror=true", "league.shares.self=0"],
            "league.mirror plays the self-play share on mirror copies",
        ),
        (
            "matrix_league_ppo",
            ["league.mirror=true", "collector.async_factor=2"],
            "league.mirror needs collector.async_factor=1",
        ),
    ],
)
def test_a_league_that_cannot_run_is_one_line_and_writes_nothing(
    tmp_path, experiment, overrides, match
):
    with pytest.raises(ConfigError, match=match) as err:
        serial_pipeline(
            experiment, overrides=overrides, exp_dir=str(tmp_path / "run"), max_train_iter=1
        )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run").exists()


def test_ding_lite_league_prints_members_ratings_and_the_matrix(tmp_path, capsys):
    from ding_lite.entry.cli.command import main

    run = tmp_path / "run"
    over = [*SHORT, "league.main_exploiters=0", "league.league_exploiters=0"]
    serial_pipeline("matrix_league_ppo", overrides=over, exp_dir=str(run), max_train_iter=4)
    capsys.readouterr()
    assert main(["league", str(run), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("league after iteration 4: 2 pool member(s) (2 playing), 1 player(s)")
    assert "main policy's exploitability: " in out
    for name in ("main ", "main-000001", "main-000004"):
        assert name in out
    assert "win rates of #1-#2 (row against column):" in out


@pytest.mark.parametrize(
    "text,why",
    [
        (None, "has no league table"),
        ("{", "is not a league table: Expecting"),
        ('{"table": {"k": 16, "ratings": {}, "pairs": []}, "iteration": -1}', "not a count"),
        (
            '{"table": {"k": 16, "ratings": {"main": 1000}, "pairs": []}, "iteration": 1, '
            '"pool": ["ghost"], "players": {"main": "main"}}',
            "the pool names members the table does not know",
        ),
        ('{"table": {"k": 16, "ratings": {"a": "x"}, "pairs": []}}', "is not a number"),
    ],
)
def test_a_missing_or_damaged_league_table_is_one_line(tmp_path, capsys, text, why):
    from ding_lite.entry.cli.command import main

    if text is not None:
        (tmp_path / "league").mkdir()
        (tmp_path / "league" / "table.json").write_text(text)
    assert main(["league", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_league_interrupted_by_sigint_resumes_as_an_unbroken_run(tmp_path):
    """Ctrl-C lands wherever it lands (often in an exploiter's iteration, the league's part
    of the main player's iteration): the checkpoint it saves holds the iteration whole, and
    the run resumed from it (in another process) ends where an unbroken one does: the same
    main and exploiter weights, pool files, table, ratings and draws."""
    import signal
    import time

    run = tmp_path / "interrupted"
    over = [*SHORT, "policy.collect.n_steps=16"]
    cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "matrix_league_ppo", "--seed", "4"]
    cmd += ["-q", "--exp-dir", str(run), "--max-train-iter", "400", *over]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    table = run / "league" / "table.json"
    deadline = time.monotonic() + 120
    while not table.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    saved = sorted((run / "ckpt").glob("ckpt_iter*.pt"))[-1]
    k = int(saved.stem.removeprefix("ckpt_iter")) + 2
    resumed = serial_pipeline(resume=str(run), max_train_iter=k, verbose=0)
    straight = _straight(tmp_path, 4, over, k)
    assert torch.equal(params(straight.model), params(resumed.model))
    a, b = _league_state(tmp_path / "straight", k), _league_state(run, k)
    assert a["league"] == b["league"]  # pool, table, ratings, draws, recent scores
    for mine, theirs in zip(a["exploiters"], b["exploiters"], strict=True):
        model_a, model_b = mine["policy"]["model"], theirs["policy"]["model"]
        assert all(torch.equal(model_a[key], model_b[key]) for key in model_a)
    for name in a["league"]["pool"]:  # the same members, frozen alike
        left = torch.load(tmp_path / "straight" / "league" / f"{name}.pt", weights_only=True)
        right = torch.load(run / "league" / f"{name}.pt", weights_only=True)
        assert all(torch.equal(left["model"][key], right["model"][key]) for key in left["model"])
