"""Per-phase wall-clock timing (``with timer("update"): ...``)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class PhaseTimer:
    """Accumulates seconds spent per named phase since the last ``pop()``."""

    def __init__(self) -> None:
        self._totals: dict[str, float] = defaultdict(float)

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._totals[phase] += time.perf_counter() - start

    def pop(self) -> dict[str, float]:
        """Returns the totals and starts afresh."""
        totals = dict(self._totals)
        self._totals.clear()
        return totals
