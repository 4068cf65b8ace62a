"""Fault matrix, workers: paused, killed or lost learners and collectors.

Each test runs ``cartpole_ppo_parallel`` (1 learner, 2 collectors) as real processes on
127.0.0.1 and hurts one of them with a signal while the run trains.
"""

from __future__ import annotations

import re
import signal
import time

import pytest
from chaos_harness import FAST, LIMITED_RUN, RUN_ITERS, assert_ledger_balanced, send
from helpers import wait_for

EXP = ["-c", "cartpole_ppo_parallel"]


def _pause(pid: int, seconds: float) -> None:
    assert send(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        send(pid, signal.SIGCONT)  # it may be dead already: the launcher replaced it


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_collector_paused_past_its_tolerance_then_resumed(chaos):
    """SIGSTOP one collector for 6 s (tolerance 3 s), then SIGCONT: the run finishes its
    iterations and every rollout it wrote is accounted for (the issue: hung for ever)."""
    proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST)
    address = chaos.address()
    assert wait_for(lambda: chaos.newest_policy() >= 1, 60), chaos.report()
    (victim,) = chaos.worker_pids(address, "collector1")
    _pause(victim, 6.0)
    assert chaos.finish(proc, 100) == 0, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    assert "collector1 lost" in chaos.log("coordinator"), chaos.report()
    assert_ledger_balanced(result)
    assert not [p for p in chaos.files("data", "**/*") if p.is_file()]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_learner_sigkill_mid_run_resumes_from_its_checkpoint_and_solves(chaos):
    """Acceptance line 2: SIGKILL of the learner after two checkpoints; the launcher starts
    learner0.r1 from the newest checkpoint, the run solves CartPole, one restart."""
    proc = chaos.launch(*EXP, "--seed", "0", "learner.hook.save_ckpt_after_iter=2", *FAST)
    address = chaos.address()
    assert wait_for(lambda: len(chaos.files("ckpt", "ckpt_iter*.pt")) >= 2, 90), chaos.report()
    (victim,) = chaos.worker_pids(address, "learner0")
    assert send(victim, signal.SIGKILL)
    assert chaos.finish(proc, 200) == 0, chaos.report()
    result = chaos.result()
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert result["eval_return_mean"] >= 475
    assert result["restarts"] == 1, result
    resumed = re.search(r"learner0\.r1 resumed at policy v(\d+)", chaos.log("coordinator"))
    assert resumed and int(resumed.group(1)) >= 2, chaos.report()
    assert re.search(r"ckpt_iter\d{8}", chaos.log("learner0.r1")), chaos.log("learner0.r1")
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_learner_paused_past_its_tolerance_is_replaced(chaos):
    """SIGSTOP the learner for 6 s (tolerance 2 s): it is declared lost, killed and replaced
    by learner0.r1 from its checkpoint; the run still finishes its iterations, exit 0 (the
    issue: exit 1 and every iteration lost)."""
    fast = [*FAST, "system.heartbeat_tolerance=2.0", "learner.hook.save_ckpt_after_iter=2"]
    proc = chaos.launch(*EXP, *LIMITED_RUN, *fast)
    address = chaos.address()
    assert wait_for(lambda: chaos.files("ckpt", "ckpt_iter*.pt"), 60), chaos.report()
    (victim,) = chaos.worker_pids(address, "learner0")
    _pause(victim, 6.0)
    assert chaos.finish(proc, 100) == 0, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    assert result["restarts"] >= 1, result
    assert (chaos.dir / "logs" / "learner0.r1.log").exists(), chaos.report()
    assert "learner0.r1 resumed" in chaos.log("coordinator"), chaos.report()
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_all_collectors_gone_ends_the_run_as_no_collectors(chaos):
    """No restart allowed, both collectors SIGKILLed: exit 1 within the watchdog's time,
    stop_reason no_collectors, one clear line and no traceback."""
    proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST, "system.max_restarts=0")
    address = chaos.address()
    assert wait_for(lambda: chaos.newest_policy() >= 1, 60), chaos.report()
    victims = chaos.worker_pids(address, "collector0") + chaos.worker_pids(address, "collector1")
    assert len(victims) == 2
    for pid in victims:
        send(pid, signal.SIGKILL)
    killed = time.monotonic()
    assert chaos.finish(proc, 60) == 1, chaos.report()
    # 2 x tolerance to give up, then closing the learner: well under the stall timeout.
    assert time.monotonic() - killed < 20.0
    result = chaos.result()
    assert result["stop_reason"] == "no_collectors" and not result["solved"], result
    out = chaos.output()
    assert "Traceback" not in out, out
    said = [line for line in out.splitlines() if "no collector" in line.lower()]
    assert len(said) == 1, out
    assert_ledger_balanced(result)
