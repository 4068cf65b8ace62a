"""``evaluate_checkpoint`` and ``ding-lite eval`` with episode outcomes."""

import re

import pytest

from ding_lite.entry.cli.command import main
from ding_lite.entry.trained.evaluate import evaluate_checkpoint
from ding_lite.utils.stats import wilson_interval

EPISODES = 24


@pytest.fixture(scope="module")
def report(aircombat_ckpt):
    return evaluate_checkpoint(
        "aircombat_ppo", aircombat_ckpt, episodes=EPISODES, overrides=["env.kwargs.opponent=random"]
    )


def test_outcome_rates_come_with_wilson_intervals(report):
    assert report["n_episodes"] == EPISODES
    counts = {}
    for name in ("win", "loss", "draw"):
        rate = report[f"{name}_rate"]
        counts[name] = round(rate * EPISODES)
        assert rate == counts[name] / EPISODES
        assert report[f"{name}_rate_ci95"] == list(wilson_interval(counts[name], EPISODES))
    assert sum(counts.values()) == EPISODES


def test_eval_command_prints_the_rates(aircombat_ckpt, capsys, report):
    code = main(
        [
            "eval",
            "-c",
            "aircombat_ppo",
            "--ckpt",
            str(aircombat_ckpt),
            "--episodes",
            str(EPISODES),
            "env.kwargs.opponent=random",
        ]
    )
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and f"over {EPISODES} episodes" in lines[0]
    number = r"(\d+\.\d)"
    pattern = "  ".join(
        rf"{name} {number}% \[{number}, {number}\]" for name in ("win", "loss", "draw")
    )
    match = re.fullmatch(pattern, lines[1])
    assert match, lines[1]
    low, high = report["win_rate_ci95"]
    assert match.group(1, 2, 3) == tuple(f"{100 * v:.1f}" for v in (report["win_rate"], low, high))


def test_before_train_evaluates_the_initial_policy_and_never_ends_the_run(tmp_path):
    """evaluator.before_train: an evaluation at iteration 0 (log, tensorboard at env step 0,
    result.json), even though with stop_value 0 it "solves" CartPole: the run goes on."""
    from ding_lite import serial_pipeline
    from ding_lite.utils.log import read_tb_scalars

    run = tmp_path / "run"
    overrides = [
        "env.num_envs=4",
        "policy.collect.n_steps=16",
        "policy.learn.batch_size=32",
        "evaluator.n_episodes=2",
        "evaluator.eval_freq=0",
        "evaluator.stop_value=0",
        "evaluator.min_train_return=none",
        "evaluator.before_train=true",
    ]
    trained = serial_pipeline(
        "cartpole_ppo", overrides=overrides, exp_dir=str(run), max_train_iter=2, verbose=0
    )
    result = trained.result
    assert result["train_iter"] == 2 and result["stop_reason"] == "max_train_iter"
    first = result["eval_before_train"]
    assert first["return_mean"] > 0 and first["win_rate"] is None
    assert "eval at iter 0 envstep 0:" in (run / "log.txt").read_text()
    (events,) = (run / "tb").glob("events*")
    steps = [step for step, _ in read_tb_scalars(events)["charts/eval_return"]]
    assert steps[0] == 0 and len(steps) == 2  # before training, and the final evaluation
