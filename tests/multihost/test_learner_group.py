"""The two-machine torchrun learner group of docs/parallel.rst ("A learner of several
ranks"), across test hosts: the coordinator on 10.0.0.1, the group's node 0 on 10.0.0.2
(rank 0, the learner the coordinator sees), a collector on 10.0.0.3 and node 1 on
10.0.0.4, each started with the page's commands. What a test machine must change is
changed: one rank per node instead of two (two cores), node 1's ``--node-rank`` and
``--host``, ``--max-restarts 1`` as the page says for a group that is to survive a rank.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from roles import RoleRun, balanced, documented_torchrun, layout

RUN_TIMEOUT_S = 360


def _set(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with the word after ``flag`` replaced by ``value``."""
    at = argv.index(flag)
    return [*argv[: at + 1], value, *argv[at + 2 :]]


def group_layout(run_dir: Path) -> dict[str, list[str]]:
    argv = layout(run_dir, collectors=1)
    node0 = _set(documented_torchrun(), "--nproc-per-node", "1")
    at = node0.index("-m")
    node0 = [*node0[:at], "--max-restarts", "1", *node0[at:]]
    node1 = _set(_set(node0, "--node-rank", "1"), "--host", "10.0.0.4")
    return {**argv, "learner": node0, "learner2": node1}


def _rank_pids(net, host: str) -> dict[int, int]:
    """rank -> pid of the ranks running in ``host`` (torchrun's agent has no RANK)."""
    ranks = {}
    for pid in net.pids(host):
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        env = dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)
        if "RANK" in env:
            ranks[int(env["RANK"])] = pid
    return ranks


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_a_learner_group_on_two_hosts_solves_after_a_rank_is_killed(hosts, tmp_path):
    net = hosts("coordinator", "learner", "collector", "learner2")
    run_dir = tmp_path / "runs" / "cartpole_1"
    run = RoleRun(net, tmp_path, group_layout(run_dir), run_dir).start()
    run.wait_iteration(6, timeout=180)  # a checkpoint (every 5 iterations) is on disk
    # What listens on each host (docs/parallel.rst, "Security defaults"): the coordinator
    # on every interface (--host 0.0.0.0); rank 0's learner on its --host at a free port
    # (the page gives it no --port); torchrun's store on every interface of the master
    # host (IPv4 and IPv6); gloo's one socket per rank on the interface towards the master.
    slave = json.loads((run_dir / "coordinator_state.json").read_text())["addresses"]
    slave_host, slave_port = slave["learner-a"].rsplit(":", 1)
    listening = {host: set(net.listening(host)) for host in run.argv}
    assert listening["coordinator"] == {("0.0.0.0", 7235)}, listening
    assert listening["collector"] == {("10.0.0.3", 7236)}, listening
    node0 = listening["learner"] - {(slave_host, int(slave_port)), ("::", 29500)}
    assert slave_host == "10.0.0.2" and len(listening["learner"]) == 3, listening
    assert [address for address, _ in node0] == ["10.0.0.2"], listening  # gloo
    assert [address for address, _ in listening["learner2"]] == ["10.0.0.4"], listening
    rank1 = _rank_pids(net, "learner2")
    assert list(rank1) == [1], (rank1, run.report())
    os.kill(rank1[1], signal.SIGKILL)
    codes = run.finish(RUN_TIMEOUT_S)
    assert codes == dict.fromkeys(run.argv, 0), run.report()
    result = run.result()
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert result["learner_ranks"] == 2, result
    assert balanced(result["ledger"]), result["ledger"]
    learner = run.out("learner")
    assert "learner 'learner-a.r1' serving on 10.0.0.2:" in learner, run.report()
    resumed = re.search(r"resumed from iteration (\d+)", learner)
    assert resumed and int(resumed.group(1)) >= 5, run.report()
    state = json.loads((run_dir / "coordinator_state.json").read_text())
    assert state["addresses"]["learner-a.r1"].startswith("10.0.0.2:"), state["addresses"]
    assert not [h for h in run.argv if "Traceback" in run.out(h)], run.report()
    assert not run.nothing_running()
