"""Partitions: a host's link cut at the switch while a run of the documented per-role
commands goes on, then restored (docs/parallel.rst, "Failures and guarantees").

Each scenario says how long it cuts which host. A cut host sees no error: its packets stop
arriving, as when a cable upstream is pulled, and its processes keep running. The four
scenarios run side by side, each on hosts of its own (they mostly wait out their cuts: one
after the other they took four minutes of the suite, using a third of a core).
"""

from __future__ import annotations

import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import pytest
from roles import RoleRun, balanced, layout

RUN_TIMEOUT_S = 300


def _start(
    hosts, tmp_path, collectors: int = 1, extra: tuple[str, ...] = (), learner: tuple = ()
) -> RoleRun:
    """The documented run on hosts; ``extra``: config overrides (to the coordinator),
    ``learner``: options added to the learner's command."""
    names = ["coordinator", "learner", "collector"]
    names += [f"collector{n}" for n in range(2, collectors + 1)]
    net = hosts(*names)
    run_dir = tmp_path / "runs" / "cartpole_1"
    argv = layout(run_dir, collectors, extra)
    argv["learner"] = [*argv["learner"], *learner]
    return RoleRun(net, tmp_path, argv, run_dir).start()


def _solved(run: RoleRun) -> dict:
    """The run ended solved, every process with exit 0, no traceback, nothing left."""
    codes = run.finish(RUN_TIMEOUT_S)
    assert codes == dict.fromkeys(run.argv, 0), run.report()
    result = run.result()
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert balanced(result["ledger"]), result["ledger"]
    assert not [h for h in run.argv if "Traceback" in run.out(h)], run.report()
    assert not run.nothing_running()
    return result


def the_learner_host_cut_off_for_40_s_is_taken_back(hosts, tmp_path):
    run = _start(hosts, tmp_path)
    run.wait_iteration(3)
    learner = run.net.pids("learner")
    run.cut_for("learner", 40.0)
    _solved(run)
    coordinator = run.out("coordinator")
    assert "learner learner-a lost" in coordinator, run.report()
    assert "learner learner-a taken back at policy v" in coordinator, run.report()
    # The same process trained on: it was never restarted, nor started a second time.
    assert run.out("learner").count("training cartpole_ppo_parallel") == 1, run.report()
    assert learner and run.procs["learner"].pid in learner


def the_coordinator_host_cut_off_from_every_worker_for_30_s(hosts, tmp_path):
    run = _start(hosts, tmp_path)
    run.wait_iteration(3)
    run.cut_for("coordinator", 30.0)
    result = _solved(run)
    coordinator = run.out("coordinator")
    assert "no worker has been heard from for" in coordinator, run.report()
    assert "lost: no heartbeat" not in coordinator, run.report()  # nobody was declared lost
    assert result["restarts"] == 0 and result["coordinator_restarts"] == 0, result


def the_collector_host_cut_off_for_15_s_and_then_for_40_s(hosts, tmp_path):
    run = _start(hosts, tmp_path)  # its only collector: the run cannot go on without it
    run.wait_iteration(2)
    run.cut_for("collector", 15.0)
    run.wait_iteration(run.iteration() + 2)
    run.cut_for("collector", 40.0)  # past the no_collectors limit of a launcher's run (20 s)
    _solved(run)
    coordinator = run.out("coordinator")
    assert coordinator.count("collector collector-gpu-a lost: no heartbeat") == 2, run.report()
    assert coordinator.count("collector collector-gpu-a is back") == 2, run.report()
    # It paused its collection while cut off, and went on once the coordinator answered.
    collector = run.out("collector")
    assert collector.count("collection paused: the coordinator has not answered") == 2
    assert collector.count("collection goes on") == 2, run.report()


def a_learner_host_that_never_comes_back_ends_the_run(hosts, tmp_path):
    # Both sides give up sooner than by default (join 120 s, master 60 s), to keep it short
    # (45 s: the learner waits that long for a coordinator that is slow to start, too).
    run = _start(
        hosts, tmp_path, extra=("system.join_timeout=15",), learner=("--master-timeout", "45")
    )
    run.wait_iteration(2)
    run.net.cut("learner")  # for good
    codes = run.finish(120, workers_s=60.0)
    assert codes["coordinator"] == 1, run.report()
    result = run.result()
    assert result["stop_reason"] == "learner_failed", result
    assert "no learner started within 15 s" in result["stop_detail"], result
    assert balanced(result["ledger"]), result["ledger"]
    # The cut-off learner stops by itself once the coordinator has not answered it for
    # its --master-timeout.
    assert codes["learner"] == 1 and "has not answered" in run.out("learner"), run.report()
    assert not [h for h in run.argv if "Traceback" in run.out(h)], run.report()


# Each scenario and when it starts (s): the starts are spread so that no two runs pay their
# start-up at once (a dozen processes importing together on two cores can take over 30 s,
# past the shortened timeouts of the learner that never comes back).
SCENARIOS = [
    (the_collector_host_cut_off_for_15_s_and_then_for_40_s, 0.0),
    (a_learner_host_that_never_comes_back_ends_the_run, 12.0),
    (the_learner_host_cut_off_for_40_s_is_taken_back, 24.0),
    (the_coordinator_host_cut_off_from_every_worker_for_30_s, 36.0),
]


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 180)
def test_partitions_across_hosts(hosts, tmp_path):
    """Every scenario above, side by side; each one's failure is reported by name."""

    def run(scenario, delay: float) -> str | None:
        time.sleep(delay)
        folder = tmp_path / scenario.__name__
        folder.mkdir()
        try:
            scenario(hosts, folder)
        except BaseException:  # noqa: BLE001 - reported with the others below
            return f"{scenario.__name__}:\n{traceback.format_exc()}"
        return None

    with ThreadPoolExecutor(len(SCENARIOS)) as pool:
        failures = [f for f in pool.map(run, *zip(*SCENARIOS, strict=True)) if f is not None]
    assert not failures, "\n\n".join(failures)
