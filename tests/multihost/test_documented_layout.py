"""docs/parallel.rst's "Running on several machines", run across four test hosts as written.

The page's own commands are read from it: the coordinator on 10.0.0.1 (``--host 0.0.0.0``),
the learner on 10.0.0.2, a collector on 10.0.0.3 and, as "each collector's machine" says,
a second one on 10.0.0.4. The hosts have exactly those addresses, so only what a test
machine must change is changed (see roles.layout): the run dir (one filesystem shared by
all hosts), the second collector's id and address (``--host 0.0.0.0``: it must register
10.0.0.4 all the same), and ``--device cuda`` without a GPU.
"""

from __future__ import annotations

import json

import pytest
from roles import RoleRun, balanced, documented_commands, layout

RUN_TIMEOUT_S = 240


def test_the_page_shows_one_command_per_role():
    commands = documented_commands()
    assert set(commands) == {"coordinator", "learner", "collector"}, commands
    assert "0.0.0.0" in commands["coordinator"]
    assert "10.0.0.1:7235" in commands["learner"] and "10.0.0.1:7235" in commands["collector"]


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_four_hosts_solve_cartpole_with_the_documented_commands(hosts, tmp_path):
    net = hosts("coordinator", "learner", "collector", "collector2")
    run_dir = tmp_path / "runs" / "cartpole_1"
    argv = layout(run_dir)
    # The second collector binds every interface: it registers its own host's address.
    argv["collector2"] = ["0.0.0.0" if w == "10.0.0.4" else w for w in argv["collector2"]]
    run = RoleRun(net, tmp_path, argv, run_dir).start()
    run.wait_iteration(2)
    # What listens on each host (docs/parallel.rst, "Security defaults"): each process on
    # the address it was given, nothing else.
    listening = {host: set(net.listening(host)) for host in argv}
    assert listening == {
        "coordinator": {("0.0.0.0", 7235)},
        "learner": {("10.0.0.2", 7236)},
        "collector": {("10.0.0.3", 7236)},
        "collector2": {("0.0.0.0", 7236)},
    }, listening
    codes = run.finish(RUN_TIMEOUT_S)
    assert codes == dict.fromkeys(run.argv, 0), run.report()
    # Bound to 0.0.0.0, it prints an address the other hosts can dial: its own.
    assert "coordinator at 10.0.0.1:7235; waiting for workers" in run.out("coordinator")
    result = run.result()
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert balanced(result["ledger"]), result["ledger"]
    # Each worker registered the address of its own host (the coordinator's record of them),
    # the one bound to 0.0.0.0 included.
    state = json.loads((run_dir / "coordinator_state.json").read_text())
    assert state["addresses"] == {
        "learner-a": "10.0.0.2:7236",
        "collector-gpu-a": "10.0.0.3:7236",
        "collector-gpu-2": "10.0.0.4:7236",
    }, state["addresses"]
    assert not run.nothing_running()
