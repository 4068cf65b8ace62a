"""A learner follower on another machine of a torchrun group leaves after rank 0: node 0's
torchrun agent, which serves the store of torchrun's exit barrier, must reach that barrier
first, or it may shut the store while the other node's agent still waits on it (a traceback
in that node's torchrun output; seen in CI on the two-host group of tests/multihost)."""

import os
import subprocess
import sys
from pathlib import Path

from helpers import exit_codes

from ding_lite.utils.distributed import free_port
from ding_lite.worker.learner.comm.ranks import AGENT_GRACE_S

SCRIPT = Path(__file__).with_name("rank_exit.py")
LEAVE_AFTER_S = 2.0  # rank 0 leaves the group this long after its exit command


def test_a_follower_on_another_node_outlasts_rank_0_and_one_on_node_0_does_not(tmp_path):
    port = str(free_port())
    group = {"WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    node_of_rank = {0: "0", 1: "0", 2: "1"}  # torchrun's GROUP_RANK: rank 2 on node 1
    procs = []
    for rank, node in node_of_rank.items():
        env = {**os.environ, "OMP_NUM_THREADS": "1", **group}
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), GROUP_RANK=node)
        argv = [sys.executable, str(SCRIPT), str(tmp_path / f"rank{rank}"), str(LEAVE_AFTER_S)]
        procs.append(subprocess.Popen(argv, env=env))
    assert exit_codes(procs, 60) == [0, 0, 0]
    left = [float((tmp_path / f"rank{rank}").read_text()) for rank in node_of_rank]
    assert left[1] < left[0], left  # node 0's follower: at once, without waiting for rank 0
    assert left[2] >= left[0] + 0.9 * AGENT_GRACE_S, left  # node 1's: after rank 0, and then some
