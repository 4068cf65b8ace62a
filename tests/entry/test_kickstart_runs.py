"""A scripted kickstarting teacher (``policy.learn.kickstart.teacher=agent:NAME``) in the
parallel pipeline: the collectors record its actions, the rollouts that carry them pass the
learner's checks, and the learner trains on them."""

from __future__ import annotations

import pytest

TEACHER = "policy.learn.kickstart.teacher"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_scripted_teacher_kickstarts_the_parallel_pipeline(tmp_path):
    from test_parallel import FAST, finished_run

    result, run = finished_run(
        tmp_path,
        "-c",
        "cartpole_ppo_parallel",
        "--max-train-iter",
        "3",
        "--collectors",
        "1",
        f"{TEACHER}=agent:balance",
        *FAST,
    )
    assert result["train_iter"] == 3 and result["ledger"]["trained"] > 0
    assert result["ledger"]["dropped_invalid"] == 0  # every rollout with teacher_action passed
    log = (run / "logs" / "learner0.log").read_text()
    assert "kickstarting from the scripted teacher agent:balance" in log
