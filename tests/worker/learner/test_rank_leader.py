"""RankLeader.close never waits for ever on a command that still holds the group."""

import threading
import time

from ding_lite.utils.distributed import GroupLost
from ding_lite.worker.learner.comm.ranks import RankLeader


def test_close_counts_a_group_held_by_a_stuck_collective_as_lost():
    """A peer killed while rank 0 is inside a collective that the backend does not fail (gloo
    can wait its whole timeout): closing gives up after its wait and reports the group lost,
    so the process exits for a restart instead of blocking until torchrun's SIGKILL."""
    lost: list[BaseException] = []
    leader = RankLeader(on_lost=lost.append)
    held = threading.Event()
    release = threading.Event()

    def stuck_collective() -> None:
        with leader._lock:  # what train() holds while its collectives run
            held.set()
            release.wait(10)

    thread = threading.Thread(target=stuck_collective, daemon=True)
    thread.start()
    assert held.wait(5)
    started = time.monotonic()
    leader.close(timeout=0.3)
    waited = time.monotonic() - started
    release.set()
    thread.join(5)
    assert 0.25 <= waited < 3, waited
    assert len(lost) == 1 and isinstance(lost[0], GroupLost), lost
    assert "still holds the group" in str(lost[0])
    assert leader._lost  # the idle loop stops, and nothing else is sent


def test_close_of_a_lost_group_sends_nothing():
    lost: list[BaseException] = []
    leader = RankLeader(on_lost=lost.append)
    leader._lost = True  # a collective failed earlier
    leader.close(timeout=0.3)  # no process group exists: sending would raise
    assert lost == []
