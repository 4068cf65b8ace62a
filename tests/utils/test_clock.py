"""Waiting in running time: a pause of the process (SIGSTOP) is not charged to a timeout."""

from __future__ import annotations

import threading
import time

from ding_lite.utils import clock
from ding_lite.utils.clock import PauseDetector, wait_running


class FakeClock:
    """``time.monotonic`` that moves only when told (and by each wait it serves)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.pause_next_wait = 0.0

    def monotonic(self) -> float:
        return self.now


class PausingEvent:
    """An event that is never set; each wait takes its time, the first also a pause."""

    def __init__(self, fake: FakeClock, pause: float) -> None:
        self.fake, self.pause, self.waits = fake, pause, 0

    def wait(self, timeout: float) -> bool:
        self.waits += 1
        self.fake.now += timeout + (self.pause if self.waits == 1 else 0.0)
        return False

    def is_set(self) -> bool:
        return False


def test_a_set_event_returns_at_once_and_a_timeout_ends_the_wait():
    event = threading.Event()
    event.set()
    assert wait_running(event, 5.0)
    start = time.monotonic()
    assert not wait_running(threading.Event(), 0.3, slice_s=0.05)
    assert 0.25 <= time.monotonic() - start < 2.0


def test_a_pause_of_the_process_does_not_use_up_the_timeout(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(clock.time, "monotonic", fake.monotonic)
    event = PausingEvent(fake, pause=20.0)
    start = fake.now
    assert not wait_running(event, 2.0, slice_s=0.25, pause_gap=1.0)
    # 2 s of running time plus the 20 s the process did not run: not 2 s of wall time.
    assert fake.now - start >= 22.0
    assert event.waits >= 8


def test_a_short_overrun_is_no_pause(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(clock.time, "monotonic", fake.monotonic)
    event = PausingEvent(fake, pause=0.5)  # a scheduling hiccup, below the gap
    start = fake.now
    wait_running(event, 2.0, slice_s=0.25, pause_gap=1.0)
    assert fake.now - start < 3.0


def test_pause_detector_counts_only_gaps_longer_than_its_limit(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(clock.time, "monotonic", fake.monotonic)
    detector = PauseDetector(gap=1.5)
    fake.now += 1.0
    assert detector.tick() == 0.0
    fake.now += 20.0
    assert detector.tick() == 20.0
    assert detector.paused_s == 20.0
