"""A worker process that leaves while one of its threads is still inside torch exits with the
code it chose, not with the C++ runtime's abort (CI saw collectors end with -6 and
"terminate called without an active exception" on a loaded host)."""

from __future__ import annotations

import subprocess
import sys

# A process whose daemon thread is busy in torch (saving and multiplying) when it leaves.
SCRIPT = """
import sys, threading, time, torch
from ding_lite.utils.log import get_logger, setup_file_logging
from ding_lite.utils.stop import exit_now_if_threads_linger

def busy():
    x = torch.randn(300, 300)
    while True:
        torch.save(x, sys.argv[1] + "/busy.pt")
        (x @ x).sum()

setup_file_logging(sys.argv[1] + "/worker.log")
threading.Thread(target=busy, daemon=True).start()
time.sleep(0.5)
print("closed", flush=False)
get_logger("collector").info("last line of the log")
code = 3
if sys.argv[2] == "guarded":
    code = exit_now_if_threads_linger(code)
sys.exit(code)
"""


def _leave(tmp_path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), mode],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_thread_inside_torch_at_exit_aborts_the_process_unguarded(tmp_path):
    """The failure mode itself: Python's shutdown ends the busy thread inside C++ code."""
    proc = _leave(tmp_path, "plain")
    assert proc.returncode == -6, (proc.returncode, proc.stderr)
    assert "terminate called" in proc.stderr


def test_the_guard_exits_with_the_chosen_code_and_flushes_output_and_log(tmp_path):
    proc = _leave(tmp_path, "guarded")
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert "terminate called" not in proc.stderr
    assert proc.stdout == "closed\n"
    assert "last line of the log" in (tmp_path / "worker.log").read_text()


def test_without_other_threads_the_code_is_returned():
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from ding_lite.utils.stop import exit_now_if_threads_linger as e; "
            "sys.exit(e(5) + 1)",
        ],
        timeout=60,
    ).returncode
    assert code == 6  # returned (5), not exited with: the caller's own exit ran
