"""The zoo experiments: each validates, trains a few iterations without NaN, names only what
differs from the shared base, and is listed with its task version, budget and rl-zoo's
figure."""

import math
import subprocess
import sys

import pytest

from ding_lite.config import EXPERIMENTS, compile_config, deep_merge_dicts
from ding_lite.config.zoo import ZOO_BASE, ZOO_EVAL_EPISODES, zoo_changes, zoo_row

ZOO = [name for name in EXPERIMENTS if name.startswith("zoo_")]
TASKS = {
    "zoo_acrobot": "Acrobot-v1",
    "zoo_mountaincar": "MountainCar-v0",
    "zoo_mountaincar_continuous": "MountainCarContinuous-v0",
    "zoo_lunarlander": "LunarLander-v3",
    "zoo_lunarlander_continuous": "LunarLanderContinuous-v3",
    "zoo_pendulum": "Pendulum-v1",
    "zoo_halfcheetah": "HalfCheetah-v5",
    "zoo_hopper": "Hopper-v5",
    "zoo_walker2d": "Walker2d-v5",
    "zoo_ant": "Ant-v5",
    "zoo_swimmer": "Swimmer-v5",
}


def leaves(tree, prefix=""):
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def test_the_zoo_covers_rl_zoos_ppo_table():
    assert ZOO == list(TASKS)
    for name, task in TASKS.items():
        row = zoo_row(name)
        assert row.task == task and row.budget > 0 and math.isfinite(row.rl_zoo)


@pytest.mark.parametrize("name", ZOO)
def test_an_experiment_names_only_what_differs_from_the_base(name):
    base = dict(leaves(deep_merge_dicts(ZOO_BASE, {})))
    repeated = {k: v for k, v in leaves(zoo_changes(name)) if k in base and base[k] == v}
    assert not repeated, f"{name} repeats the zoo base: {repeated}"
    cfg = compile_config(name)
    row = zoo_row(name)
    assert cfg.env.name == f"gym:{row.task}" and cfg.max_env_step == row.budget
    # A zoo run trains its whole budget and ends on one evaluation of the same size for all.
    assert cfg.evaluator.stop_value is None and cfg.evaluator.eval_freq == 0
    assert cfg.evaluator.n_episodes == ZOO_EVAL_EPISODES
    assert cfg.policy.eval.deterministic


@pytest.mark.parametrize("name", ZOO)
def test_a_zoo_experiment_trains_a_few_iterations_without_nan(name, tmp_path):
    from ding_lite import serial_pipeline

    # The experiment's own model, losses and normalizations; rollouts shortened to keep CI
    # fast (MuJoCo and Box2D steps are the cost).
    small = [
        "policy.collect.n_steps=16",
        "policy.learn.batch_size=16",
        "policy.learn.n_epochs=2",
        "evaluator.n_episodes=2",
    ]
    run = serial_pipeline(
        name, verbose=0, seed=0, max_train_iter=2, exp_dir=str(tmp_path / "run"), overrides=small
    )
    result = run.result
    assert result["train_iter"] == 2 and result["skipped_steps"] == 0
    assert math.isfinite(result["eval_return_mean"]) and result["eval_episodes"] == 2
    for parameter in run.model.parameters():
        assert parameter.isfinite().all()


def test_ding_lite_list_shows_task_budget_and_rl_zoos_figure():
    listed = subprocess.run(
        [sys.executable, "-m", "ding_lite", "list"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("zoo_halfcheetah "))
    assert "gym:HalfCheetah-v5 x" in line
    assert "rl-zoo PPO 5819 on HalfCheetah-v3" in line
    assert "trains 1,000,000 env steps, then 20 eval episodes" in line
    mcc = next(x for x in listed.stdout.splitlines() if x.startswith("zoo_mountaincar_continuous "))
    assert "trains 20,000 env steps" in mcc and "ppo+gSDE" in mcc
