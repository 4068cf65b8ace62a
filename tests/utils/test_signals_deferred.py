"""signals_deferred: the first SIGINT or SIGTERM of a block waits for its end, a second one
comes at once (a serial run's iteration is whole in the checkpoint an interruption saves)."""

from __future__ import annotations

import os
import signal

import pytest

from ding_lite.utils.stop import signals_deferred


def test_the_first_signal_waits_for_the_end_of_the_block():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the rest of the block ran")
    assert done == ["the rest of the block ran"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_signal_comes_at_once():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            done.append("not reached")
    assert done == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sigterm_is_delivered_to_the_handler_in_force_before_the_block():
    seen = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            assert seen == []
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_block_without_signals_changes_nothing():
    with signals_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
