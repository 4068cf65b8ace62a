"""docs/examples/slurm_ding_lite.sh, run on this machine with stand-ins for SLURM's tools.

``srun`` here runs its command ``--ntasks`` times at once with ``SLURM_PROCID`` set, and
``scontrol show hostnames`` prints ``localhost``; everything binds 127.0.0.1. The job must
end with the run's exit code 0, the learner's two ranks under torchrun, and nothing left.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import slurm_stand_ins

from ding_lite.utils.distributed import free_port

SCRIPT = Path(__file__).parents[2] / "docs" / "examples" / "slurm_ding_lite.sh"

FAKE_SRUN = """#!/usr/bin/env python3
import os, subprocess, sys
args, ntasks = sys.argv[1:], 1
while args and args[0].startswith("--"):
    if args[0] == "--ntasks":
        ntasks = int(args[1])
    args = args[2:]
procs = [subprocess.Popen(args, env=dict(os.environ, SLURM_PROCID=str(i))) for i in range(ntasks)]
sys.exit(max(p.wait() for p in procs))
"""
FAKE_SCONTROL = """#!/bin/sh
[ "$1 $2" = "show hostnames" ] && echo localhost
"""


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_slurm_recipe_runs_a_job_on_one_node(tmp_path):
    run = tmp_path / "run"
    env = slurm_stand_ins(
        tmp_path,
        FAKE_SRUN,
        FAKE_SCONTROL,
        SLURM_JOB_NUM_NODES="1",
        SLURM_JOB_NODELIST="localhost",
        SLURM_JOB_ID="4242",
        HEAD_ADDR="127.0.0.1",
        BIND="127.0.0.1",
        WORKER_HOST="127.0.0.1",
        RANKS_PER_NODE="2",
        COLLECTORS="1",
        PORT=str(free_port()),
        RDZV_PORT=str(free_port()),
    )
    overrides = ["max_train_iter=4", "system.heartbeat_period=0.2", "system.task_timeout=30"]
    job = subprocess.Popen(
        ["bash", str(SCRIPT), "cartpole_ppo_parallel", str(run), *overrides],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = job.communicate(timeout=150)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, 9)
            job.wait(10)
    assert job.returncode == 0, out
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == 4, result
    assert "rank 1 of 2: training cartpole_ppo_parallel" in out, out
    leftover = subprocess.run(["pgrep", "-f", str(run)], capture_output=True, text=True)
    assert not leftover.stdout.strip(), leftover.stdout
