"""Timing guards of the coordinator: the progress watchdog, per-worker backoff, quiet logs."""

from __future__ import annotations

import time
from typing import Any

STALL_FACTOR = 20  # an iteration may take this many times the slowest one so far
BACKOFF_START_S = 0.05
BACKOFF_MAX_S = 5.0


class Watchdog:
    """Says when no iteration completed for too long.

    The limit is ``max(stall_timeout, 20 x the slowest iteration so far)``: a run whose
    updates are slow gets time in proportion, a run that stopped moving ends.

    Args:
        stall_timeout: seconds without a completed iteration (``system.stall_timeout``).
    """

    def __init__(self, stall_timeout: float) -> None:
        self.stall_timeout = stall_timeout
        self.slowest = 0.0
        self._last = time.monotonic()

    @property
    def limit(self) -> float:
        return max(self.stall_timeout, STALL_FACTOR * self.slowest)

    def progressed(self) -> None:
        """An iteration completed now."""
        now = time.monotonic()
        self.slowest = max(self.slowest, now - self._last)
        self._last = now

    def restart_clock(self) -> None:
        """Starts the wait afresh (after a restart the new worker gets the full limit)."""
        self._last = time.monotonic()

    def silent_for(self) -> float:
        return time.monotonic() - self._last

    def stalled(self) -> bool:
        return self.silent_for() > self.limit


class Backoff:
    """Exponential backoff per key: a failing worker is asked less and less often."""

    def __init__(self, start: float = BACKOFF_START_S, cap: float = BACKOFF_MAX_S) -> None:
        self.start, self.cap = start, cap
        self._delay: dict[str, float] = {}
        self._next: dict[str, float] = {}

    def ready(self, key: str) -> bool:
        return time.monotonic() >= self._next.get(key, 0.0)

    def failed(self, key: str) -> float:
        """Records a failure; returns the seconds until the key is ready again."""
        delay = min(self._delay.get(key, self.start / 2) * 2, self.cap)
        self._delay[key] = delay
        self._next[key] = time.monotonic() + delay
        return delay

    def succeeded(self, key: str) -> None:
        self._delay.pop(key, None)
        self._next.pop(key, None)


class QuietLog:
    """Logs a message of one kind at most once per ``interval`` seconds, counting the rest."""

    def __init__(self, logger: Any, interval: float = 1.0) -> None:
        self.logger, self.interval = logger, interval
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def __call__(self, level: str, key: str, message: str) -> None:
        now = time.monotonic()
        if now - self._last.get(key, -self.interval) < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return
        held = self._held.pop(key, 0)
        suffix = f" ({held} more like it in the last {self.interval:g} s)" if held else ""
        self._last[key] = now
        getattr(self.logger, level)(message + suffix)
