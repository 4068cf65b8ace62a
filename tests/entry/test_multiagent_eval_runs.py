"""A parallel run on an env with several agents per copy (``grid``, 4 each) gets its
evaluations: the evaluating collector counts each agent's episode, and the coordinator
accepts ``evaluator.n_episodes`` copies x their agents (it refused every such report once,
so these runs ended with no evaluation at all)."""

from __future__ import annotations

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_parallel_grid_run_is_evaluated_over_every_agents_episode(tmp_path):
    from test_parallel import FAST, finished_run

    result, run = finished_run(
        tmp_path,
        "-c",
        "grid_ppo_parallel",
        "--max-train-iter",
        "2",
        "--collectors",
        "1",
        "env.num_envs=4",
        "policy.collect.n_steps=16",
        "policy.learn.bptt_horizon=16",
        "policy.learn.batch_size=128",
        "evaluator.n_episodes=3",
        "evaluator.eval_freq=1",
        *FAST,
    )
    assert result["train_iter"] == 2
    assert result["eval_episodes"] == 3 * 4  # 3 copies x 4 agents
    assert math.isfinite(result["eval_return_mean"])
    assert "refused an evaluation" not in (run / "logs" / "coordinator.log").read_text()
