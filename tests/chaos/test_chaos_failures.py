"""Fault matrix, runs that cannot reach their target: divergence and a full disk. Each must
end within its timeout with one clear line, the right stop_reason and a non-zero exit."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import time

import pytest
from chaos_harness import FAST, NEVER_SOLVED, assert_ledger_balanced, stderr_lines
from helpers import wait_for

EXP = ["-c", "cartpole_ppo_parallel"]


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_learning_rate_1e30_diverges_and_1e39_is_refused(chaos):
    """1e39 is not finite in float32: a config error (exit 2, one line, no run dir); 1e30
    makes every step non-finite: the run stops as diverged with its skipped steps counted
    (the issue: exit 0 "not solved", and an overflow traceback for 1e39)."""
    refused = chaos.launch(*EXP, "policy.learn.learning_rate=1e39", name="refused", split=True)
    assert chaos.finish(refused, 60, "refused") == 2, chaos.errors("refused")
    lines = stderr_lines(chaos.errors("refused"))
    assert len(lines) == 1 and "learning_rate" in lines[0], lines
    assert not chaos.dir.exists()

    proc = chaos.launch(
        *EXP, "--max-train-iter", "30", *NEVER_SOLVED, *FAST, "policy.learn.learning_rate=1e30"
    )
    chaos.address()
    assert chaos.finish(proc, 120) == 1, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "diverged" and not result["solved"], result
    assert result["skipped_steps"] > 0, result
    out = chaos.output()
    assert "Traceback" not in out, out
    assert len([line for line in out.splitlines() if "diverged" in line]) >= 1, out
    assert_ledger_balanced(result)


def _mount_tmpfs(path, size: str) -> None:
    path.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            check=True,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as err:
        path.rmdir()
        pytest.skip(f"disk full needs a small tmpfs and mounting one is not permitted here: {err}")


def _fill(folder, leave: int) -> int:
    """Writes a ballast file into ``folder`` until its filesystem has about ``leave`` bytes
    free; returns the ballast's size."""
    ballast = folder / "ballast"
    written = 0
    with open(ballast, "wb") as f:
        while True:
            st = os.statvfs(folder)
            room = st.f_bavail * st.f_frsize - leave
            if room <= 0:
                break
            try:
                f.write(b"\0" * min(room, 1 << 16))
                f.flush()
            except OSError as err:
                assert err.errno == errno.ENOSPC
                break
            written += min(room, 1 << 16)
    return written


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_disk_full_mid_run_ends_with_one_line(chaos):
    """The run's filesystem (a 4 MB tmpfs) fills up mid-run, as when another program fills
    the disk: exit 1 within its timeout, stop_reason disk_full when result.json could be
    written, one clear line and no traceback (the issue: the training thread died, the
    coordinator looped, and SIGTERM then hung the launcher)."""
    disk = chaos.base / "disk"
    _mount_tmpfs(disk, "4m")
    chaos.allowed.add("disk")
    chaos.after_teardown.append(lambda: _unmount(disk))
    chaos.dir = disk / "run"
    proc = chaos.launch(
        *EXP, "--max-train-iter", "30", *NEVER_SOLVED, *FAST, "learner.hook.save_ckpt_after_iter=2"
    )
    chaos.address()
    assert wait_for(lambda: chaos.files("ckpt", "ckpt_iter*.pt"), 60), chaos.report()
    # Room for result.json and a few log lines, not for the next rollout (~37 kB) or
    # checkpoint (~130 kB).
    assert _fill(disk, leave=24 << 10) > 0
    filled = time.monotonic()
    assert chaos.finish(proc, 90) == 1, chaos.report()
    assert time.monotonic() - filled < 60
    out = chaos.output()
    assert "Traceback" not in out and "Logging error" not in out, out
    # One clear line: it says the disk is full and names where (a path in the run dir).
    said = [
        line
        for line in out.splitlines()
        if re.search(r"no space left|disk (is )?full", line, re.I) and str(chaos.dir) in line
    ]
    assert said, out
    if (chaos.dir / "result.json").exists():
        result = chaos.result()
        assert result["stop_reason"] == "disk_full", result
        assert_ledger_balanced(result)


def _unmount(path) -> None:
    subprocess.run(["umount", str(path)], check=False, capture_output=True, timeout=10)
    if os.path.ismount(path):
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True, timeout=10)
