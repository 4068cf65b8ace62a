"""``evaluate_checkpoint`` and ``ding-lite eval`` with episode outcomes."""

import re

import pytest

from ding_lite.entry.cli import main
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
