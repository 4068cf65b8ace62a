"""A worker's process: one learner or collector per command (``ding-lite learner|collector``),
for runs that span machines sharing a filesystem; the launcher's children and Ray actors run
:func:`run_worker` too. The coordinator's process is :mod:`.coordinator_process`."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import ding_lite.entry.trained  # noqa: F401  (the package registers the "ppo" opponent)
from ding_lite.envs.env_modules import import_env_modules
from ding_lite.interaction import SLAVES, Slave, resolve_token
from ding_lite.utils import distributed
from ding_lite.utils.distributed import GroupLost
from ding_lite.utils.log import get_logger, setup_console_logging
from ding_lite.utils.stop import sigterm_interrupts
from ding_lite.worker.collector.comm import FlaskFileSystemCollector
from ding_lite.worker.learner.comm import FlaskFileSystemLearner
from ding_lite.worker.learner.comm.ranks import GROUP_LOST_EXIT, RankFollower

WORKER_SWITCH_INTERVAL_S = 0.0005  # a worker's GIL switch interval (Python's default: 5 ms)


def _follow(device: str | None) -> int:
    """A learner rank other than 0, until rank 0 says exit (0), the group breaks
    (``GROUP_LOST_EXIT``) or SIGTERM/SIGINT (130)."""
    try:
        with sigterm_interrupts():
            return RankFollower(device).run()
    except GroupLost as err:
        get_logger("learner").error(f"learner group lost ({err}); stopping")
        return GROUP_LOST_EXIT
    except KeyboardInterrupt:
        return 130


def run_worker(
    role: str,
    *,
    coordinator: str,
    worker_id: str,
    device: str | None = None,
    host: str = "127.0.0.1",
    advertise: str | None = None,
    heartbeat_period: float = 1.0,
    token: str | None = None,
    port: int = 0,
    master_timeout: float = 60.0,
    quiet: bool = False,
    resident: bool = False,
    dist_timeout: float = 60.0,
    env_modules: Sequence[str] = (),
) -> int:
    """Runs one learner or collector until the coordinator closes it (or SIGTERM/SIGINT).

    ``env_modules`` are imported first (``--import``): the only modules that the config of
    a start task may name (``env.import_modules``, ``gym:module:Id``). A start task naming
    another is answered with a one-line ConfigError, and nothing is imported.

    ``quiet`` logs warnings and errors only. A ``resident`` worker stays up after a close
    task, for the coordinator's next start task (DI-engine's resident comm learner).

    The worker also stops when the coordinator has not answered its heartbeats for
    ``master_timeout`` seconds, so a crashed launcher leaves no worker behind for long.

    A learner started as one rank of a group (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and
    ``MASTER_PORT`` set, as torchrun and ``--learners N`` do) joins it first, waiting at most
    ``dist_timeout`` seconds for its peers at any point; rank 0 serves the coordinator, the
    others follow it (:class:`~ding_lite.worker.learner.comm.ranks.RankFollower`).
    """
    token = resolve_token(token)
    import_env_modules(env_modules)  # before anything else: a bad one is one line, exit 2
    worker_cls = {"learner": FlaskFileSystemLearner, "collector": FlaskFileSystemCollector}[role]

    def slave(handlers: dict) -> Slave:  # a LearnerSlave or a CollectorSlave
        return SLAVES[role](
            worker_id,
            coordinator,
            handlers=handlers,
            token=token,
            host=host,
            port=port,
            advertise_address=advertise,
            heartbeat_period=heartbeat_period,
            report_timeout=master_timeout,
            register_timeout=master_timeout,  # a coordinator starting or paused: wait for it
        )

    # The launcher sends a worker's stderr to its log.
    setup_console_logging(logging.WARNING if quiet else logging.INFO)
    # A task is handled by the HTTP threads while the training or collection thread keeps
    # the GIL busy; at Python's default 5 ms switch interval each hand-over between them
    # can wait that long, and a task round trip has several.
    sys.setswitchinterval(WORKER_SWITCH_INTERVAL_S)
    if role == "learner":
        if distributed.env_world_size() > 1 and distributed.init_from_env(dist_timeout)[0] > 0:
            return _follow(device)
        restarts = os.environ.get(distributed.RESTART_COUNT, "0")
        if restarts.isdigit() and int(restarts) > 0:  # torchrun restarted the group
            worker_id = f"{worker_id}.r{restarts}"  # a new learner, as the launcher names it
    worker = worker_cls(worker_id=worker_id, device=device, slave_factory=slave)
    try:
        with sigterm_interrupts():
            return _serve(worker, role, resident, master_timeout)
    except KeyboardInterrupt:
        return 130
    finally:
        worker.close()


def _serve(worker: Any, role: str, resident: bool, master_timeout: float) -> int:
    """Runs a worker until the coordinator closes it (0) or it must stop (1)."""
    worker.start()
    while True:
        if worker.closed.wait(0.2):
            if not resident:
                break
            time.sleep(0.2)  # closed, and waiting for the next start task
        if worker.slave.evicted:  # another process holds this id now: leave it to it
            get_logger(role).error(f"stopping: {worker.slave.evicted}")
            return 1
        silent = time.monotonic() - worker.slave.last_contact
        if silent > master_timeout:
            get_logger(role).error(f"the coordinator has not answered for {silent:.0f} s; stopping")
            return 1
    time.sleep(0.3)  # let the close task's result reach the coordinator
    return 0
