"""Addresses across hosts: a worker registers an address the coordinator's host can dial,
or it is refused at once with one line naming the address (docs/parallel.rst, "Addresses").
"""

from __future__ import annotations

import signal

import pytest
from roles import RoleRun, layout


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_worker_the_coordinator_cannot_call_back_stops_at_once_naming_the_address(
    hosts, tmp_path
):
    net = hosts("coordinator", "learner", "collector")
    run_dir = tmp_path / "runs" / "cartpole_1"
    argv = layout(run_dir, collectors=1)
    # Its own host's loopback: on the coordinator's host that address is nobody's.
    argv["collector"] += ["--advertise", "127.0.0.1:7236"]
    run = RoleRun(net, tmp_path, {k: argv[k] for k in ("coordinator", "collector")}, run_dir)
    run.start()
    try:
        code = run.procs["collector"].wait(timeout=60)
    finally:
        run.procs["coordinator"].send_signal(signal.SIGTERM)  # still waiting for workers
    codes = run.finish(30)
    collector = run.out("collector")
    assert code == 2 and codes["coordinator"] == 143, run.report()
    said = [line for line in collector.splitlines() if "cannot reach" in line]
    assert len(said) == 1, collector
    assert "the coordinator cannot reach this worker at 127.0.0.1:7236" in said[0], said
    assert "--advertise" in said[0] and "Traceback" not in collector, collector
    assert "refused registration of 'collector-gpu-a': cannot reach 127.0.0.1:7236" in run.out(
        "coordinator"
    )
    assert not run.nothing_running()
