"""Waiting that tells the time the process ran from the time it was paused.

``time.monotonic()`` keeps counting while a process is stopped (SIGSTOP, a VM migration, a
long swap storm). A wait that measures its timeout with it expires during such a pause, and
on waking the process would blame the other side for its own absence. These helpers wait
in short slices and count a slice that overran by more than ``pause_gap`` as a pause: the
overrun is not charged to the timeout.
"""

from __future__ import annotations

import threading
import time

WAIT_SLICE_S = 0.25  # a waiting thread looks at the clock at least this often
PAUSE_GAP_S = 1.0  # a slice that overran by more than this was a pause of the process


def wait_running(
    event: threading.Event,
    timeout: float,
    slice_s: float = WAIT_SLICE_S,
    pause_gap: float = PAUSE_GAP_S,
) -> bool:
    """Waits until ``event`` is set or ``timeout`` seconds of running time have passed.

    Returns:
        Whether the event is set.
    """
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return event.is_set()
        asked = min(slice_s, remaining)
        before = time.monotonic()
        if event.wait(asked):
            return True
        overrun = time.monotonic() - before - asked
        if overrun > pause_gap:
            deadline += overrun  # the process was not running: the wait goes on


class PauseDetector:
    """Notices that the thread calling :meth:`tick` regularly did not run for a while.

    Args:
        gap: a pause is a time between two ticks longer than this many seconds.
    """

    def __init__(self, gap: float) -> None:
        self.gap = gap
        self.paused_s = 0.0  # all pauses noticed so far, in seconds
        self._last = time.monotonic()

    def tick(self) -> float:
        """Records a tick; returns the length of the pause that ended now (0.0: none)."""
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        if elapsed <= self.gap:
            return 0.0
        self.paused_s += elapsed
        return elapsed
