"""The ``chaos`` fixture: a :class:`~chaos_harness.ChaosRun` whose teardown checks are part of
every test of the fault matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chaos_harness import ChaosRun


@pytest.fixture
def chaos(tmp_path: Path) -> Any:
    """A :class:`ChaosRun` in ``tmp_path``; its teardown checks are part of every test."""
    run = ChaosRun(tmp_path)
    yield run  # pytest runs the rest whether the test passed or not
    problems = run.teardown_problems()
    assert not problems, "teardown: " + "\n".join(problems) + "\n" + run.report()
