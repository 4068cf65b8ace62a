"""A data-parallel learner (``--learners 2``): two torch.distributed ranks on 127.0.0.1.

The group solves CartPole; a rank killed mid-run takes the group down, the launcher
restarts both ranks from the newest checkpoint (one restart), and the run still solves.
Teardown (the ``chaos`` fixture) checks no process, port or stray file is left; these tests
also check the group's rendezvous port is closed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from chaos_harness import FAST, assert_ledger_balanced, send
from helpers import port_is_free, wait_for

from ding_lite.utils.distributed import free_port

EXP = ["-c", "cartpole_ppo_parallel", "--learners", "2"]


def rank_env(pid: int) -> dict[str, str]:
    """The environment of a process (RANK, MASTER_PORT, ...)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # gone meanwhile
        return {}
    return dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)


def ranks_of(chaos, address: str, worker_id: str) -> dict[int, int]:
    """rank -> pid of the live ranks of a learner group (torchrun's agent, which has the
    same arguments but no RANK, left out)."""
    envs = {pid: rank_env(pid) for pid in chaos.worker_pids(address, worker_id)}
    return {int(env["RANK"]): pid for pid, env in envs.items() if "RANK" in env}


def check_group_port_closed(chaos, port: str) -> None:
    chaos.after_teardown.append(
        lambda: (
            wait_for(lambda: port_is_free(f"127.0.0.1:{port}"), 5.0)
            or pytest.fail(f"the learner group's store port {port} is still listening")
        )
    )


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_two_learner_ranks_solve_cartpole(chaos):
    """One seed: a learning check, not a learning figure (seeds are the benchmarks' job); the
    ranks' step is checked against one process's exactly in
    tests/worker/learner/distributed/."""
    proc = chaos.launch(*EXP, "--seed", "0")
    address = chaos.address()
    assert wait_for(lambda: len(ranks_of(chaos, address, "learner0")) == 2, 30), chaos.report()
    port = rank_env(ranks_of(chaos, address, "learner0")[1])["MASTER_PORT"]
    check_group_port_closed(chaos, port)
    assert chaos.finish(proc, 120) == 0, chaos.report()
    result = chaos.result()
    assert result["solved"] and result["eval_return_mean"] >= 475, result
    assert result["learners"] == result["learner_ranks"] == 2, result
    assert result["restarts"] == 0, result
    assert "rank 1 of 2: training cartpole_ppo_parallel" in chaos.log("learner0.rank1")
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_rank1_sigkill_restarts_the_group_from_its_checkpoint_and_solves(chaos):
    """Acceptance line 2: SIGKILL of rank 1 after two checkpoints; both ranks of
    learner0.r1 start from the newest checkpoint, the run solves, one restart."""
    proc = chaos.launch(*EXP, "--seed", "0", "learner.hook.save_ckpt_after_iter=2", *FAST)
    address = chaos.address()
    assert wait_for(lambda: len(chaos.files("ckpt", "ckpt_iter*.pt")) >= 2, 90), chaos.report()
    ranks = ranks_of(chaos, address, "learner0")
    assert sorted(ranks) == [0, 1], ranks
    check_group_port_closed(chaos, rank_env(ranks[1])["MASTER_PORT"])
    assert send(ranks[1], signal.SIGKILL)
    assert wait_for(lambda: not ranks_of(chaos, address, "learner0"), 30), chaos.report()
    assert chaos.finish(proc, 200) == 0, chaos.report()
    result = chaos.result()
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert result["restarts"] == 1, result
    assert "learner learner0 failed" in chaos.log("coordinator") + chaos.output(), chaos.report()
    resumed = re.search(r"learner0\.r1 resumed at policy v(\d+)", chaos.log("coordinator"))
    assert resumed and int(resumed.group(1)) >= 2, chaos.report()
    # Both ranks of the new group loaded the same checkpoint.
    loaded = re.search(r"resumed from iteration (\d+)", chaos.log("learner0.r1"))
    assert loaded, chaos.log("learner0.r1")
    follower = chaos.log("learner0.r1.rank1")
    assert re.search(rf"from \S+ckpt_iter0*{loaded.group(1)}\.pt", follower), follower
    assert_ledger_balanced(result)


def start_torchrun(chaos, address: str, token: dict, *extra: str) -> tuple:
    """``torchrun --nproc-per-node 2 [extra] -m ding_lite learner`` on 127.0.0.1, output to
    ``torchrun.out``; returns (process, its group's port)."""
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    launcher = [torchrun] if torchrun else [sys.executable, "-m", "torch.distributed.run"]
    port = str(free_port())
    out = open(chaos.base / "torchrun.out", "w")  # noqa: SIM115 (the child owns it)
    chaos.allowed.add("torchrun.out")
    try:
        chaos.procs["torchrun"] = subprocess.Popen(
            [*launcher, "--nnodes", "1", "--nproc-per-node", "2", *extra]
            + ["--master-addr", "127.0.0.1", "--master-port", port]
            + ["-m", "ding_lite", "learner", "--coordinator", address, "--worker-id", "tr0"]
            + ["--heartbeat-period", "0.2"],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=chaos.cwd,
            env=dict(os.environ, **token),
            start_new_session=True,
        )
    finally:
        out.close()
    check_group_port_closed(chaos, port)
    return chaos.procs["torchrun"], port


def start_coordinator_and_collector(chaos, token: dict, *overrides: str) -> str:
    chaos.command(
        "coordinator",
        ["coordinator", "-c", "cartpole_ppo_parallel", "--exp-dir", str(chaos.dir)]
        + ["system.collectors=1", *FAST, *overrides],
        env=token,
    )
    return chaos.address("coordinator")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_torchrun_learner_ranks_with_a_coordinator_and_a_collector(chaos):
    """Acceptance line 3: ``torchrun --nproc-per-node 2 -m ding_lite learner`` against a
    ``ding-lite coordinator`` with one ``ding-lite collector`` completes the run."""
    token = {"DING_LITE_TOKEN": "torchrun-test-token"}
    address = start_coordinator_and_collector(chaos, token, "max_train_iter=8")
    torchrun, _ = start_torchrun(chaos, address, token)
    collector = chaos.command(
        "collector", ["collector", "--coordinator", address, "--worker-id", "c0"], env=token
    )
    assert chaos.finish(chaos.procs["coordinator"], 150, "coordinator") == 0, chaos.report(
        "coordinator"
    )
    assert chaos.finish(torchrun, 30, "torchrun") == 0, chaos.output("torchrun")
    assert chaos.finish(collector, 30, "collector") == 0, chaos.output("collector")
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == 8, result
    assert result["learners"] == 1 and result["learner_ranks"] == 2, result  # torchrun's ranks
    said = chaos.output("torchrun")
    assert "rank 1 of 2: training cartpole_ppo_parallel" in said, said
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_torchrun_restarts_a_group_that_lost_a_rank_from_its_checkpoint(chaos):
    """SIGKILL of rank 1 under ``torchrun --max-restarts 1``: rank 0 exits (code 3), the
    agent starts both ranks again, the new rank 0 registers as ``tr0.r1`` (a new learner),
    every rank loads the newest checkpoint, and the run completes its iterations.

    gloo does not always fail rank 0's collective when its peer dies; then torchrun's SIGTERM
    ends rank 0 (closing gives up on the held group after a bounded wait) and the restart
    takes longer than FAST's 20 s stall limit allows, so this run gets 60 s."""
    token = {"DING_LITE_TOKEN": "torchrun-test-token"}
    address = start_coordinator_and_collector(
        chaos, token, "max_train_iter=120", "evaluator.stop_value=none",
        "learner.hook.save_ckpt_after_iter=2", "system.stall_timeout=60",
    )  # fmt: skip
    torchrun, _ = start_torchrun(chaos, address, token, "--max-restarts", "1")
    chaos.command(
        "collector", ["collector", "--coordinator", address, "--worker-id", "c0"], env=token
    )
    assert wait_for(lambda: len(chaos.files("ckpt", "ckpt_iter*.pt")) >= 2, 60), chaos.report(
        "coordinator"
    )
    ranks = ranks_of(chaos, address, "tr0")
    assert sorted(ranks) == [0, 1], ranks
    assert send(ranks[1], signal.SIGKILL)
    assert chaos.finish(chaos.procs["coordinator"], 150, "coordinator") == 0, chaos.output(
        "coordinator"
    ) + chaos.output("torchrun")
    assert chaos.finish(torchrun, 30, "torchrun") == 0, chaos.output("torchrun")
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == 120, result
    said = chaos.output("torchrun")
    assert "learner 'tr0.r1' serving" in said, said
    resumed = re.search(r"resumed from iteration (\d+)", said)
    assert resumed and int(resumed.group(1)) >= 2, said
    assert re.search(rf"rank 1 of 2: training \S+ from \S+ckpt_iter0*{resumed.group(1)}\.pt", said)
    assert_ledger_balanced(result)
