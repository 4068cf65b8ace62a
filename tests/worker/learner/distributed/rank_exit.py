"""One rank of the exit-order test (run as a script by the test, under RANK/WORLD_SIZE/
MASTER_* and torchrun's LOCAL_WORLD_SIZE for the machines it plays).

Rank 0 leads with a :class:`RankLeader` and closes at once; the others follow with a
:class:`RankFollower`, and the last rank leaves the group only ``argv[2]`` seconds after
the exit command (a follower slow to end). Each writes, to ``argv[1]``, the time it left.
"""

import sys
import time

from ding_lite.utils import distributed
from ding_lite.worker.learner.comm import ranks


def main(out: str, leave_after_s: float) -> None:
    rank, size = distributed.init_from_env(timeout_s=30)
    if rank == 0:
        ranks.RankLeader().close(timeout=10)
    else:
        if rank == size - 1:
            finalize = distributed.finalize

            def slow_finalize() -> None:
                time.sleep(leave_after_s)
                finalize()

            ranks.distributed.finalize = slow_finalize  # what run() calls after "exit"
        assert ranks.RankFollower().run() == 0
    with open(out, "w") as f:
        f.write(repr(time.time()))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
