"""The type checker over ding_lite/ is clean: the package ships ``py.typed``, so users'
checkers read these annotations, and they must hold.

mypy runs with the project's settings (``[tool.mypy]`` in pyproject.toml: every module
checked, the public API strictly) and a cache of its own in tmp_path, so the run starts
from nothing and leaves nothing in the checkout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_mypy_finds_no_error_in_the_package(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy_cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"mypy found errors:\n{done.stdout}{done.stderr}"
    assert done.stdout.startswith("Success: no issues found"), done.stdout
