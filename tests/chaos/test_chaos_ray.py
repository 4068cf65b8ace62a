"""The Ray launcher (``--launcher ray``) with a local Ray instance, as CI runs it.

A run solves CartPole with its workers as Ray actors; a collector actor killed mid-run is
replaced through the launcher's restart policy. Ctrl-C stopping every actor and the Ray
instance is checked at the end of test_chaos_ray_auth.py's run (one run less in CI).
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest
from chaos_harness import FAST, assert_ledger_balanced, send
from helpers import wait_for

pytest.importorskip("ray")

EXP = ["-c", "cartpole_ppo_parallel", "--launcher", "ray"]
RAY_MARKERS = ("ray::", "raylet", "gcs_server", "ray/_private", "ray/dashboard", "ray/autoscaler")


def ray_processes(ray_tmp: str | None = None) -> dict[int, str]:
    """pid -> command line of every live Ray process on this machine; with ``ray_tmp``,
    only those of the Ray instance kept there (started with ``RAY_TMPDIR=ray_tmp`` or
    naming it), not another test's that runs beside this one."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            env = (entry / "environ").read_bytes() if ray_tmp else b""
        except (OSError, IndexError):
            continue
        if state == "Z" or not any(marker in cmd for marker in RAY_MARKERS):
            continue
        if ray_tmp and ray_tmp not in cmd and f"RAY_TMPDIR={ray_tmp}\0".encode() not in env:
            continue
        found[int(entry.name)] = cmd[:160]
    return found


@pytest.fixture
def ray_baseline(chaos, monkeypatch):
    """Ray processes that existed before the test; at teardown none of the test's Ray
    instance may be left, nor its session files (kept in a folder of the test's, not
    /tmp/ray). Another test's Ray (tests run side by side) is not this test's to judge."""
    before = set(ray_processes())
    # Ray's socket paths must stay under 108 bytes: a short folder of /tmp, not tmp_path.
    ray_tmp = tempfile.mkdtemp(prefix="dlray", dir="/tmp")
    monkeypatch.setenv("RAY_TMPDIR", ray_tmp)  # the launcher's children inherit it

    def check() -> None:
        left = {}
        gone = wait_for(lambda: not ray_processes(ray_tmp), 15.0, 0.2)
        if not gone:
            left = ray_processes(ray_tmp)
            for pid in left:
                send(pid, signal.SIGKILL)
        shutil.rmtree(ray_tmp, ignore_errors=True)
        assert gone, f"Ray processes left behind: {left}"

    chaos.after_teardown.append(check)
    return before


def collector_actor(before: set[int], log: Path) -> int | None:
    """The pid of the actor process whose output goes to ``log`` (the worker's log in this
    test's run dir: another test's Ray instance beside it has workers of the same names)."""
    for pid, cmd in ray_processes().items():
        if pid in before or "ray::" not in cmd:
            continue
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # the process is gone
            continue
        for fd in fds:  # a busy worker opens and closes files and sockets all the time
            try:
                if fd.readlink() == log:
                    return pid
            except OSError:  # closed while listed
                continue
    return None


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_ray_launcher_solves_cartpole_with_a_local_instance(chaos, ray_baseline):
    proc = chaos.launch(*EXP, "--seed", "0")
    assert chaos.finish(proc, 120) == 0, chaos.report()
    result = chaos.result()
    assert result["solved"] and result["eval_return_mean"] >= 475, result
    assert result["restarts"] == 0, result
    assert_ledger_balanced(result)
    assert "Traceback" not in chaos.output(), chaos.output()


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_two_learner_ranks_as_ray_actors_in_one_placement_group(chaos, ray_baseline):
    proc = chaos.launch(*EXP, "--learners", "2", "--seed", "1")
    assert chaos.finish(proc, 120) == 0, chaos.report()
    result = chaos.result()
    assert result["solved"] and result["learners"] == 2 and result["restarts"] == 0, result
    assert "rank 1 of 2: training cartpole_ppo_parallel" in chaos.log("learner0.rank1")
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_dead_collector_actor_is_replaced_and_the_run_solves(chaos, ray_baseline):
    proc = chaos.launch(*EXP, "--seed", "1", *FAST)
    chaos.address()
    assert wait_for(lambda: chaos.newest_policy() >= 2, 60), chaos.report()
    # The learner may train on collector0's rollouts before collector1's actor has started.
    victim = None
    deadline = time.monotonic() + 60
    while victim is None and time.monotonic() < deadline:
        victim = collector_actor(ray_baseline, chaos.dir / "logs" / "collector1.log")
        time.sleep(0.1)
    assert victim is not None, ray_processes()
    assert send(victim, signal.SIGKILL)
    assert chaos.finish(proc, 120) == 0, chaos.report()
    result = chaos.result()
    assert result["solved"] and result["restarts"] == 1, result
    assert "collector1.r1" in chaos.log("coordinator"), chaos.report()
    assert_ledger_balanced(result)
