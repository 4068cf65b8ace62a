"""Critic-free runs end to end: no value head anywhere, held-back steps resume exactly."""

from __future__ import annotations

import json

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.utils.log import read_tb_scalars

SMALL = [
    "env.num_envs=8",
    "env.reset_group_size=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "policy.learn.n_epochs=2",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
    "policy.learn.kl_in_reward.type=adaptive",
    "policy.learn.kl_in_reward.coef=0.05",
    "policy.learn.kl_in_reward.horizon=100",
]


def params(policy):
    return torch.cat([p.detach().flatten() for p in policy.model.parameters()])


def test_grpo_trains_without_a_value_head_and_logs_its_data(tmp_path):
    run = tmp_path / "run"
    policy = serial_pipeline(
        "cartpole_grpo", seed=0, overrides=SMALL, exp_dir=str(run), max_train_iter=4, verbose=0
    )
    assert policy.result["train_iter"] == 4
    ckpt = torch.load(run / "ckpt" / "ckpt_iter00000004.pt", weights_only=True)
    names = list(ckpt["policy"]["model"])
    assert names and not any("value" in n or "critic" in n for n in names)
    (events,) = (run / "tb").glob("events*")
    scalars = read_tb_scalars(events)
    for tag in (
        "data/reward_mean",
        "data/pending_steps",
        "charts/kl_reward_coef",
        "data/kl_in_reward",
        "perf/advantage_s",
        "perf/update_s",
    ):
        assert len(scalars[tag]) == 4, tag
    assert all(value == 1.0 for _, value in scalars["data/reward_mean"])  # CartPole
    coefs = [value for _, value in scalars["charts/kl_reward_coef"]]
    assert coefs[0] == pytest.approx(0.05) and coefs[-1] != coefs[0]  # adapted


def test_resuming_continues_exactly_with_the_held_back_steps(tmp_path):
    """k iterations straight == j iterations, then a resume to k: the steps held back for
    unfinished groups and the adapted KL coefficient travel in the checkpoint."""
    straight = serial_pipeline(
        "cartpole_grpo", seed=3, overrides=SMALL, exp_dir=str(tmp_path / "a"), max_train_iter=6
    )
    run = tmp_path / "b"
    serial_pipeline(
        "cartpole_grpo", seed=3, overrides=SMALL, exp_dir=str(run), max_train_iter=2, verbose=0
    )
    state = torch.load(run / "ckpt" / "ckpt_iter00000002.pt", weights_only=True)
    assert state["policy"]["advantage_step"]["pending"]["col"].numel() > 0
    resumed = serial_pipeline(resume=str(run), max_train_iter=6, verbose=0)
    assert torch.equal(params(straight), params(resumed))
    assert json.loads((run / "result.json").read_text())["train_iter"] == 6


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_grpo_runs_in_the_parallel_pipeline(tmp_path):
    """Two collectors, each its own stream of copies and groups: the learner holds their
    unfinished groups back apart and trains on the complete ones; nothing is left."""
    from test_parallel import FAST, finished_run

    result, run = finished_run(
        tmp_path,
        "-c",
        "cartpole_grpo",
        "--max-train-iter",
        "6",
        "--collectors",
        "2",
        *[o for o in SMALL if not o.startswith("policy.learn.kl_in_reward")],
        *FAST,
    )
    assert result["train_iter"] == 6 and result["stop_reason"] == "max_train_iter"
    ledger = result["ledger"]
    assert ledger["written"] == sum(
        v for k, v in ledger.items() if k.startswith(("trained", "dropped"))
    )
    (events,) = (run / "tb" / "learner0").glob("events.out.tfevents.*")
    scalars = read_tb_scalars(events)
    trained = [value for _, value in scalars["charts/minibatches"]]
    assert sum(trained) > 0 and len(scalars["data/pending_steps"]) == 6
    ckpt = sorted((run / "ckpt").glob("ckpt_iter*.pt"))[-1]
    model = torch.load(ckpt, weights_only=True)["policy"]["model"]
    assert not any("value" in n for n in model)
