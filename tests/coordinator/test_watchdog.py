"""The coordinator's timing guards."""

import logging

from ding_lite.coordinator import watchdog as wd


def test_watchdog_limit_grows_with_the_slowest_iteration(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(wd.time, "monotonic", lambda: now[0])
    dog = wd.Watchdog(stall_timeout=10.0)
    now[0] += 2.0
    dog.progressed()
    assert dog.limit == 40.0  # 20 x 2 s
    now[0] += 39.0
    assert not dog.stalled()
    now[0] += 2.0
    assert dog.stalled() and dog.silent_for() == 41.0
    dog.restart_clock()
    assert not dog.stalled()


def test_backoff_doubles_up_to_its_cap_and_resets(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(wd.time, "monotonic", lambda: now[0])
    backoff = wd.Backoff(start=0.1, cap=0.5)
    delays = [backoff.failed("c") for _ in range(5)]
    assert delays == [0.1, 0.2, 0.4, 0.5, 0.5]
    assert not backoff.ready("c")
    now[0] += 0.5
    assert backoff.ready("c")
    backoff.succeeded("c")
    assert backoff.failed("c") == 0.1


def test_quiet_log_says_a_repeated_message_at_most_once_a_second(monkeypatch, caplog):
    now = [0.0]
    monkeypatch.setattr(wd.time, "monotonic", lambda: now[0])
    quiet = wd.QuietLog(logging.getLogger("test.quiet"), interval=1.0)
    with caplog.at_level(logging.ERROR, logger="test.quiet"):
        for _ in range(38):
            quiet("error", "k", "task failed")
            now[0] += 0.026
        now[0] += 1.0
        quiet("error", "k", "task failed")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "task failed" and len(lines) == 2
    assert "more like it" in lines[1]
