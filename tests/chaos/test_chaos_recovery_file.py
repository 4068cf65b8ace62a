"""Fault matrix, the coordinator's recovery file edited while the run is live (issue 40).

``ding-lite parallel`` runs ``cartpole_ppo_parallel`` (1 learner, 2 collectors) on
127.0.0.1. The coordinator is paused (SIGSTOP, so it cannot save meanwhile), its
``coordinator_state.json`` is edited as a hostile tester would, and it is killed; the
supervisor starts a new one, which reads the edited file. Nothing in the file may crash it,
mislead the supervisor, or cost a worker: a file it refuses is refused whole, and the
workers still running are taken back all the same.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from typing import Any

import pytest
from chaos_harness import FAST, LIMITED_RUN, assert_ledger_balanced, send
from helpers import wait_for

from ding_lite.coordinator.recovery import RECOVERY_FILE

EXP = ["-c", "cartpole_ppo_parallel", *LIMITED_RUN, *FAST]


def _edit_and_kill(chaos, edit: Callable[[dict[str, Any]], None]) -> None:
    """Pauses the coordinator, edits its saved state with ``edit``, kills it, and waits
    for the supervisor's next coordinator to serve."""
    (coordinator,) = chaos.coordinator_pids()
    assert send(coordinator, signal.SIGSTOP)
    path = chaos.dir / RECOVERY_FILE
    state = json.loads(path.read_text())
    edit(state)
    path.write_text(json.dumps(state))
    assert send(coordinator, signal.SIGKILL)
    assert wait_for(lambda: [p for p in chaos.coordinator_pids() if p != coordinator], 30, 0.05), (
        chaos.report()
    )


def _out_of_range(state: dict[str, Any]) -> None:
    """Finding 1: numbers no counter can hold (the old coordinator crashed in the
    tensorboard writer on each restart until the restart budget was spent)."""
    state["envstep_base"] = 10**30
    state["policy"][1] = 10**30
    state["batch_size"] = 10**30


def _finished(state: dict[str, Any]) -> None:
    """Finding 5: ``phase: finished`` with no result.json written (the supervisor read a
    result.json that was not there: a traceback, exit 1, rollouts left)."""
    state["phase"] = "finished"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_edited_recovery_file_costs_no_worker_and_the_run_finishes(chaos):
    """Findings 1, 2, 5 and the restart count of 11 in one run: twice the coordinator is
    killed with its file edited. Each new coordinator refuses the file in one line, takes
    the run's live workers back (no worker is restarted: the old one failed every
    collector as "already started"), counts its restart (1, then 2: each used to log
    "coordinator restart 1"), and the run reaches its iterations with exit 0, a balanced
    ledger and no traceback."""
    proc = chaos.launch(*EXP, "--seed", "0")
    chaos.address()
    assert wait_for(lambda: chaos.newest_policy() >= 3, 60, 0.05), chaos.report()
    _edit_and_kill(chaos, _out_of_range)
    at = chaos.newest_policy()
    assert wait_for(lambda: chaos.newest_policy() >= at + 3, 60, 0.05), chaos.report()
    _edit_and_kill(chaos, _finished)
    assert chaos.finish(proc, 180) == 0, chaos.report()

    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter", result
    assert result["coordinator_restarts"] == 2 and result["restarts"] == 0, result
    assert_ledger_balanced(result)
    log = chaos.log("coordinator")
    assert re.search(r"field '(envstep_base|policy.version|batch_size)' must be a count", log), (
        chaos.report()
    )
    assert "phase 'finished' but" in log, chaos.report()
    assert log.count("starting the run's coordination afresh") == 2, chaos.report()
    assert "coordinator restart 1 " in log and "coordinator restart 2 " in log, chaos.report()
    assert len(re.findall(r"collector collector\d taken back, running", log)) == 4, log[-3000:]
    assert "already started" not in log, chaos.report()
    assert "Traceback" not in chaos.output() + log, chaos.report()
    assert not list((chaos.dir / "logs").glob("*.r1.log"))  # no worker was replaced
    # status.json follows the run (it stayed "starting" when each new coordinator crashed)
    assert json.loads((chaos.dir / "status.json").read_text())["state"] == "finished"
