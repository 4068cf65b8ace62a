"""env.reward_fn from a user's module (--import), end to end: the serial and the parallel
pipeline train on the function's reward, and an unknown name is one line before a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ding_lite.utils.log import read_tb_scalars

MODULE = """
import torch
from ding_lite.envs import register_reward_fn


@register_reward_fn("flat")
def flat(obs, action, reward, next_obs, info, value=0.25):
    return torch.full_like(reward, value)
"""
SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
    "env.reward_fn_kwargs.value=0.25",
]


def _run(tmp_path, *args: str, reward: str = "flat") -> subprocess.CompletedProcess:
    (tmp_path / "flat_reward.py").write_text(MODULE)
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", *args, "--import", "flat_reward", *SMALL]
        + [f"env.reward_fn={reward}"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=150,
    )


def _trained_rewards(events_dir) -> list[float]:
    (events,) = events_dir.glob("events.out.tfevents.*")
    return [value for _, value in read_tb_scalars(events)["data/reward_mean"]]


def test_the_serial_pipeline_trains_on_an_imported_reward_function(tmp_path):
    run = _run(
        tmp_path, "serial", "-c", "cartpole_ppo", "--exp-dir", "run", "--max-train-iter", "2"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert _trained_rewards(tmp_path / "run" / "tb") == [0.25, 0.25]
    # The returns the run reports stay CartPole's own (1 per step).
    assert json.loads((tmp_path / "run" / "result.json").read_text())["train_return_mean"] > 1


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_parallel_pipeline_trains_on_an_imported_reward_function(tmp_path):
    args = ("parallel", "-c", "cartpole_ppo_parallel", "--exp-dir", "run", "--max-train-iter", "2")
    run = _run(tmp_path, *args)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rewards = _trained_rewards(tmp_path / "run" / "tb" / "learner0")
    assert rewards and all(r == pytest.approx(0.25) for r in rewards)


def test_an_unknown_reward_function_is_one_line_and_writes_nothing(tmp_path):
    run = _run(tmp_path, "serial", "-c", "cartpole_ppo", "--exp-dir", "run", reward="nope")
    assert run.returncode != 0
    assert "unknown reward function 'nope'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()
