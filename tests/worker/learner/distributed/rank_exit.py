"""One rank of the exit-order test (run as a script by the test, under RANK/WORLD_SIZE/
MASTER_* and torchrun's GROUP_RANK for the machine it plays).

Rank 0 leads with a :class:`RankLeader` and closes at once, but leaves the group only
``argv[2]`` seconds after its exit command (a rank 0 slow to end); the others follow with a
:class:`RankFollower`. Each writes, to ``argv[1]``, the time it left the group.
"""

import sys
import time

from ding_lite.utils import distributed
from ding_lite.worker.learner.comm import ranks


def main(out: str, leave_after_s: float) -> None:
    rank, _ = distributed.init_from_env(timeout_s=30)
    if rank == 0:
        finalize = distributed.finalize

        def slow_finalize() -> None:
            time.sleep(leave_after_s)
            finalize()

        ranks.distributed.finalize = slow_finalize  # what close() calls after "exit"
        ranks.RankLeader().close(timeout=10)
    else:
        assert ranks.RankFollower().run() == 0
    with open(out, "w") as f:
        f.write(repr(time.time()))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
