"""Fault matrix, the run dir: resuming after a crash, a kill during a save, two runs on one
dir, and a run interrupted before its first iteration."""

from __future__ import annotations

import os
import re
import signal

import pytest
from chaos_harness import (
    FAST,
    LIMITED_RUN,
    NEVER_SOLVED,
    RUN_ITERS,
    assert_ledger_balanced,
    stderr_lines,
)
from helpers import processes_with, wait_for

EXP = ["-c", "cartpole_ppo_parallel"]
CKPT_EVERY_2 = "learner.hook.save_ckpt_after_iter=2"


def _versions(chaos, folder: str, pattern: str) -> list[int]:
    return sorted(
        int(re.search(r"(\d+)\.pt$", p.name).group(1)) for p in chaos.files(folder, pattern)
    )


def _crash_after_policy(chaos, version: int) -> None:
    """Trains with a checkpoint every 2 iterations until policy ``version`` is published, then
    SIGKILLs the whole run (the launcher's process group, its coordinator and every worker)
    at once."""
    proc = chaos.launch(*EXP, "--max-train-iter", "100", *NEVER_SOLVED, *FAST, CKPT_EVERY_2)
    address = chaos.address()

    assert wait_for(lambda: chaos.newest_policy() >= version, 90, 0.02), chaos.report()
    workers = processes_with(f"--coordinator {address} ")
    coordinator = processes_with(f"coordinator --resume {chaos.dir} ")
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher is its group's leader
    for pid in workers + coordinator:  # each in a session of its own
        os.kill(pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    assert wait_for(lambda: not processes_with(f"--coordinator {address} "), 10)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_resume_after_a_crash_with_policies_newer_than_the_checkpoint(chaos):
    """``parallel --resume`` where published policies are newer than the newest checkpoint:
    they are removed, the collectors start from the checkpoint's version and the run reaches
    its iterations (the issue: 0 iterations, hung for ever)."""
    _crash_after_policy(chaos, 5)
    ckpts, policies = _versions(chaos, "ckpt", "ckpt_iter*.pt"), _versions(chaos, "policy", "*.pt")
    assert ckpts and max(policies) > max(ckpts), (ckpts, policies)  # the case under test
    proc = chaos.launch("--resume", str(chaos.dir), "--max-train-iter", "10", *FAST, name="resume")
    chaos.address("resume")
    assert chaos.finish(proc, 100, "resume") == 0, chaos.report("resume")
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter", result
    assert result["train_iter"] == 10 and result["policy_version"] == 10, result
    assert f"ckpt_iter{max(ckpts):08d}" in chaos.log("learner0")
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_resume_after_a_kill_during_a_checkpoint_save(chaos):
    """A kill during a save, simulated: a 0-byte temp file of an unfinished save and the
    newest checkpoint truncated to half. Resume warns naming the corrupt one, falls back to
    the one before it, finishes, and the temp file is gone (the issue: "[Errno 22]")."""
    _crash_after_policy(chaos, 5)
    ckpt_dir = chaos.dir / "ckpt"
    tmp = ckpt_dir / ".ckpt_iter00000099.pt.abc.tmp"
    tmp.write_bytes(b"")
    newest = max(chaos.files("ckpt", "ckpt_iter*.pt"))
    assert len(chaos.files("ckpt", "ckpt_iter*.pt")) >= 2  # something to fall back to
    content = newest.read_bytes()
    newest.write_bytes(content[: len(content) // 2])
    proc = chaos.launch("--resume", str(chaos.dir), "--max-train-iter", "10", *FAST, name="resume")
    chaos.address("resume")
    assert chaos.finish(proc, 100, "resume") == 0, chaos.report("resume")
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == 10, result
    said = chaos.output("resume") + "".join(chaos.log(p.stem) for p in chaos.files("logs"))
    warned = [line for line in said.splitlines() if newest.name in line]
    assert any(re.search(r"warn|skip|corrupt|unreadable", w, re.I) for w in warned), warned
    # The coordinator's log says it too, beside the resume line.
    assert f"unreadable: {newest.name}" in chaos.log("coordinator")
    assert not tmp.exists() and not list(ckpt_dir.glob(".*.tmp"))
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_second_run_on_the_same_dir_is_refused(chaos):
    """Two runs at once with the same --exp-dir: the second exits 2 with one line naming the
    first one's pid, touching nothing; the first finishes (the issue: both ran, one log)."""
    first = chaos.launch(*EXP, *LIMITED_RUN, *FAST)
    chaos.address()
    config = (chaos.dir / "config.json").read_bytes()
    second = chaos.launch(*EXP, *LIMITED_RUN, *FAST, name="second", split=True)
    assert chaos.finish(second, 30, "second") == 2, chaos.errors("second")
    lines = stderr_lines(chaos.errors("second"))
    assert len(lines) == 1 and str(first.pid) in lines[0], lines
    assert not chaos.output("second").strip()
    assert (chaos.dir / "config.json").read_bytes() == config
    assert chaos.finish(first, 100) == 0, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    assert chaos.log("coordinator").count("master serving on") == 1  # one run wrote here
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_interrupted_during_start_up_can_be_run_again(chaos):
    """Ctrl-C (SIGINT) right after the coordinator is up, before any iteration: exit 130;
    the very same command then runs to its end, exit 0 (the issue: the dir could neither be
    reused nor resumed)."""
    command = [*EXP, "--max-train-iter", "4", *NEVER_SOLVED, *FAST]
    proc = chaos.launch(*command, name="interrupted")
    chaos.address("interrupted")
    proc.send_signal(signal.SIGINT)
    assert chaos.finish(proc, 30, "interrupted") == 130, chaos.report("interrupted")
    assert "iter=" not in chaos.output("interrupted")  # it did fail before its first iteration
    proc = chaos.launch(*command, name="again")
    chaos.address("again")
    assert chaos.finish(proc, 100, "again") == 0, chaos.report("again")
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == 4
    assert_ledger_balanced(result)
