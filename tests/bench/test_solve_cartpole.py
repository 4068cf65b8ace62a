"""bench/solve_cartpole.py's ding_lite side still runs against the current serial pipeline
(it builds a SerialRun itself, so an API change there breaks it silently otherwise)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "solve_cartpole.py"


def test_ding_lite_side_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--seeds", "0", "--skip-sb3", "--ding-max-steps", "8192"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ding_lite seed 0:" in proc.stdout
