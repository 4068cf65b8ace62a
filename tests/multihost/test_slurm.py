"""docs/examples/slurm_ding_lite.sh as ``sbatch --nodes 2`` would run it, on two test hosts.

Stand-ins for SLURM's tools place the job's steps on the hosts: ``scontrol show
hostnames`` prints ``node1`` and ``node2``, and ``srun`` starts task i of a step on node
``i mod nodes`` (SLURM's cyclic distribution) with ``SLURM_PROCID`` set, under the node's
host name. The names resolve on every host (a cluster's DNS). The batch script itself runs
on node1, the job's first node, with the page's defaults: the coordinator binds 0.0.0.0,
each worker binds and registers its node's host name, and torchrun's c10d rendezvous is on
node1. Only what two cores need is changed: one collector per node (``COLLECTORS=2``) and a
short run (``max_train_iter``).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import DOCS, slurm_stand_ins
from roles import balanced

SCRIPT = DOCS / "examples" / "slurm_ding_lite.sh"
ITERATIONS = 6

SRUN = """#!/usr/bin/env python3
import os, subprocess, sys
args, opts = sys.argv[1:], {}
while args and args[0].startswith("--"):
    opts[args[0]], args = args[1], args[2:]
nodes = os.environ["SLURM_TEST_NODES"].split()
n_nodes = int(opts.get("--nodes", len(nodes)))
procs = []
for task in range(int(opts.get("--ntasks", n_nodes))):
    node = nodes[task % n_nodes]
    env = dict(os.environ, SLURM_PROCID=str(task), SLURM_NODEID=str(task % n_nodes))
    netns = os.environ["SLURM_TEST_PREFIX"] + "-" + node
    named = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', node]
    procs.append(subprocess.Popen(["ip", "netns", "exec", netns, *named, *args], env=env))
sys.exit(max(p.wait() for p in procs))
"""
SCONTROL = """#!/bin/sh
[ "$1 $2" = "show hostnames" ] && echo "$SLURM_TEST_NODES" | tr ' ' '\\n'
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_slurm_script_runs_a_two_node_job_across_hosts(hosts, tmp_path):
    net = hosts("node1", "node2")
    net.name_hosts()
    run_dir = tmp_path / "runs" / "cp1"
    env = slurm_stand_ins(
        tmp_path,
        SRUN,
        SCONTROL,
        SLURM_JOB_NUM_NODES="2",
        SLURM_JOB_NODELIST="node[1-2]",
        SLURM_JOB_ID="4243",
        SLURM_TEST_NODES="node1 node2",
        SLURM_TEST_PREFIX=net.prefix,
        COLLECTORS="2",
    )
    env.pop("DING_LITE_TOKEN", None)  # the script makes the job's own
    argv = ["bash", str(SCRIPT), "cartpole_ppo_parallel", str(run_dir)]
    with open(tmp_path / "job.out", "w") as out:
        job = net.start(
            "node1",
            [*argv, f"max_train_iter={ITERATIONS}"],
            as_host=True,
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        code = job.wait(timeout=240)
    said = (tmp_path / "job.out").read_text(errors="replace")
    assert code == 0, said[-6000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["stop_reason"] == "max_train_iter", result
    assert result["train_iter"] == ITERATIONS and result["learner_ranks"] == 2, result
    assert balanced(result["ledger"]), result["ledger"]
    assert "Traceback" not in said, said[-6000:]
    # Each worker registered its own node's address (its host name, resolved).
    state = json.loads((run_dir / "coordinator_state.json").read_text())
    addresses = {w: a.rsplit(":", 1)[0] for w, a in state["addresses"].items()}
    assert addresses["collector0"] == "node1" and addresses["collector1"] == "node2", addresses
    assert addresses["learner0"] in ("node1", "node2"), addresses  # wherever rank 0 landed
    assert not [h for h in ("node1", "node2") if net.pids(h)], said[-3000:]
