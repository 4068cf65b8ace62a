"""The launcher: starts the worker processes of a parallel run on this machine and restarts
the ones that fail.

It is the coordinator's supervisor. A worker that died, or that the coordinator declared lost
(a paused process past the heartbeat tolerance), is killed for certain and replaced by a new
process under a fresh id (``<id>.r<n>``, so the coordinator's duplicate-id rule never blocks
it), after a backoff, at most ``system.max_restarts`` times per run. A restarted learner
resumes from the latest checkpoint (the coordinator's start task says so).

A data-parallel learner (``system.learners`` = N > 1) is one group of N processes, ranks
0 to N-1 of a torch.distributed group on this machine; rank 0 is the worker the coordinator
sees. A rank that dies takes the group down: all N are killed and started again together,
which counts as one restart.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from ding_lite.config.modules import named_env_modules
from ding_lite.utils.log import get_logger
from ding_lite.utils.ports import free_port
from ding_lite.utils.stop import signals_held
from ding_lite.utils.threads import worker_thread_env

CHILD_STOP_S = 8.0  # children get this long to exit before they are killed
RESTART_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)  # wait before the n-th restart of one worker


class Launcher:
    """Starts, supervises and stops the learner and collector processes of one run.

    Args:
        cfg: the resolved config (``system.learners``, ``system.collectors``,
            ``system.max_restarts``, ``system.heartbeat_period``).
        address: the coordinator's ``host:port``.
        token: the run's shared token (handed to children in their environment).
        log_dir: each worker logs to ``<log_dir>/<worker id>.log``.
    """

    def __init__(
        self, cfg: Any, address: str, token: str, log_dir: Path, register: str | None = None
    ) -> None:
        self.cfg, self.address, self.token, self.log_dir = cfg, address, token, log_dir
        self.register = register  # a Python config file every worker runs first, or None
        self.procs: dict[str, subprocess.Popen] = {}  # worker id -> process, old ones too
        self.followers: dict[str, list[subprocess.Popen]] = {}  # id -> its ranks 1..N-1
        self.roles: dict[str, str] = {}
        self.restarts = 0  # workers replaced
        self.coordinator_restarts = 0  # coordinators restarted (the supervisor's)
        self._handled: dict[str, bool] = {}  # worker id -> whether a replacement follows
        self._due: list[tuple[float, str, str]] = []  # (when, role, new id)
        self._generation: dict[str, int] = {}
        self._registered: set[str] = set()
        self._lost: set[str] = set()  # declared lost by the master: gone, even if it returns
        self._closing = False  # the run is closing: nothing is replaced any more
        self._logger = get_logger("launcher")

    def start_all(self) -> None:
        system = self.cfg.system
        roles = ["learner"] + ["collector"] * system.collectors  # N learner ranks: one group
        counts: dict[str, int] = {}
        for role in roles:
            index = counts.setdefault(role, 0)
            counts[role] += 1
            self._spawn(role, f"{role}{index}")

    def _spawn(self, role: str, worker_id: str) -> None:
        # A Ctrl-C or SIGTERM arriving inside Popen (after the fork) would leave a child that
        # is in no list, so nothing would stop it: they wait until it is recorded.
        ranks = self.cfg.system.learners if role == "learner" else 1
        with _signals_deferred():
            procs = self._start_group(role, worker_id, ranks)
            self.procs[worker_id] = procs[0]
            self.followers[worker_id] = procs[1:]
            self.roles[worker_id] = role

    def _start_group(self, role: str, worker_id: str, ranks: int) -> list[Any]:
        """Starts the processes of one worker (``ranks`` > 1: a learner group on this
        machine); returns them, rank 0 first. Each is a ``subprocess.Popen``, or what
        behaves like one (``poll``, ``wait``, ``terminate``, ``kill``, ``returncode``)."""
        group = {"WORLD_SIZE": str(ranks), "MASTER_ADDR": "127.0.0.1"}
        if ranks > 1:
            group["MASTER_PORT"] = str(free_port())
        procs = []
        for rank in range(ranks):
            env = {**group, "RANK": str(rank), "LOCAL_RANK": str(rank)} if ranks > 1 else None
            procs.append(
                spawn_worker(
                    role,
                    worker_id,
                    self.address,
                    self.token,
                    self.cfg,
                    self.log_dir,
                    self.register,
                    rank_env=env,
                )
            )
        return procs

    # --- the coordinator's supervisor ----------------------------------------------------
    def worker_failed(self, worker_id: str, role: str, reason: str) -> bool:
        """Kills what is left of ``worker_id`` and schedules its replacement.

        Returns whether a replacement will register (False: not a worker of this launcher,
        or no restart left). Calling it again for the same id repeats the first answer.
        """
        if worker_id in self._handled:
            return self._handled[worker_id]
        proc = self.procs.get(worker_id)
        if proc is None:
            return False
        for each in [proc, *self.followers.get(worker_id, [])]:
            _kill(each)
        if not self._restart_left():
            self._logger.error(
                f"{role} {worker_id} failed ({reason}); no restart left "
                f"(system.max_restarts={self.cfg.system.max_restarts})"
            )
            self._handled[worker_id] = False
            return False
        base = worker_id.split(".r")[0]
        n = self._generation.get(base, 0) + 1
        self._generation[base] = n
        self.restarts += 1
        delay = RESTART_BACKOFF_S[min(n, len(RESTART_BACKOFF_S)) - 1]
        new_id = f"{base}.r{n}"
        self._due.append((time.monotonic() + delay, role, new_id))
        self._handled[worker_id] = True
        self._logger.warning(f"{role} {worker_id} failed ({reason}); {new_id} starts in {delay} s")
        return True

    def _restart_left(self) -> bool:
        """Workers and the coordinator share one budget of ``system.max_restarts``."""
        return self.restarts + self.coordinator_restarts < self.cfg.system.max_restarts

    def restart_coordinator(self, reason: str, attempt: int = 1) -> float | None:
        """Books a coordinator restart; returns the backoff before it (by ``attempt``: the
        restarts in a row that did not move the run on), or None when no restart is left."""
        if not self._restart_left():
            self._logger.error(
                f"the coordinator {reason}; no restart left "
                f"(system.max_restarts={self.cfg.system.max_restarts})"
            )
            return None
        self.coordinator_restarts += 1
        delay = RESTART_BACKOFF_S[min(max(attempt, 1), len(RESTART_BACKOFF_S)) - 1]
        self._logger.warning(f"the coordinator {reason}; a new one starts in {delay} s")
        return delay

    def pending(self, role: str) -> int:
        """Replacements due, or started and still starting (alive, not yet registered)."""
        due = sum(1 for _, r, _ in self._due if r == role)
        starting = sum(
            1
            for wid, proc in self.procs.items()
            if self.roles[wid] == role
            and wid not in self._registered
            and wid not in self._handled
            and proc.poll() is None
        )
        return due + starting

    def poll(self) -> None:
        """Starts the replacements that are due; replaces children that exited on their own."""
        if self._closing:
            return
        now = time.monotonic()
        for item in [d for d in self._due if d[0] <= now]:
            self._due.remove(item)
            self._spawn(item[1], item[2])
        for wid, proc in list(self.procs.items()):
            if wid in self._handled:
                continue
            if proc.poll() is not None:
                self.worker_failed(wid, self.roles[wid], f"exited with code {proc.returncode}")
            for rank, follower in enumerate(self.followers.get(wid, []), 1):
                if follower.poll() is not None:
                    reason = f"its rank {rank} exited with code {follower.returncode}"
                    self.worker_failed(wid, self.roles[wid], reason)

    def closing(self) -> None:
        """The coordinator closes the run: workers exit from now on, none is replaced."""
        self._closing = True
        self._due.clear()

    def retire(self, worker_id: str) -> None:
        """``worker_id`` was dropped for good: when it exits, nothing replaces it."""
        if worker_id in self.procs:
            self._handled.setdefault(worker_id, False)

    def mark_registered(self, worker_ids: list[str]) -> None:
        self._registered.update(worker_ids)

    def worker_lost(self, worker_id: str) -> None:
        """The master declared ``worker_id`` lost (e.g. paused past its heartbeat tolerance).

        It stays gone even if it comes back and registers again: the coordinator sees it as
        dead and has it killed and replaced. Called from the master's event thread.
        """
        if worker_id in self.procs:
            self._lost.add(worker_id)

    def alive(self, worker_id: str) -> bool:
        """False for a child of this launcher whose process ended or that was declared lost;
        True otherwise."""
        proc = self.procs.get(worker_id)
        if proc is None:
            return True
        gone = worker_id in self._handled or worker_id in self._lost
        ranks = [proc, *self.followers.get(worker_id, [])]
        return not gone and all(p.poll() is None for p in ranks)

    def stop_all(self) -> None:
        """Waits for closed workers to exit, then SIGTERM, then SIGKILL; all within ~10 s."""
        self._due.clear()
        followers = [p for procs in self.followers.values() for p in procs]
        stop_children([*self.procs.values(), *followers])


class WorkerWatch(Protocol):
    """What :class:`LauncherTransport` asks of a launcher, or of the supervisor's link to
    one (:class:`~ding_lite.entry.launch.link.SupervisorLink`)."""

    def mark_registered(self, worker_ids: list[str]) -> None: ...

    def alive(self, worker_id: str) -> bool: ...


class LauncherTransport:
    """The Master, seen by the coordinator: a child whose process ended, or that the launcher
    gave up on, counts as gone at once, before its heartbeats run out."""

    def __init__(self, master: Any, launcher: WorkerWatch) -> None:
        self.master, self.launcher = master, launcher

    def worker_ids(self, role: str) -> list[str]:
        ids = self.master.worker_ids(role)
        self.launcher.mark_registered(ids)
        return [w for w in ids if self.launcher.alive(w)]

    def send_task(self, worker_id: str, name: str, data: dict, timeout: float) -> Any:
        return self.master.send_task(worker_id, name, data, timeout=timeout)

    def send_task_async(self, worker_id: str, name: str, data: dict, timeout: float) -> Any:
        return self.master.send_task_async(worker_id, name, data, timeout=timeout)

    def workers(self, role: str | None = None) -> list[Any]:
        return self.master.workers(role)

    def restore_workers(self, workers: list[tuple[str, str, str]]) -> None:
        self.master.restore_workers(workers)

    @property
    def paused_s(self) -> float:
        return self.master.paused_s

    @property
    def cut_off_s(self) -> float:
        return self.master.cut_off_s


def spawn_worker(
    role: str,
    worker_id: str,
    address: str,
    token: str,
    cfg: Any,
    log_dir: Path,
    register: str | None = None,
    rank_env: dict[str, str] | None = None,
) -> subprocess.Popen:
    """Starts ``ding-lite <role>`` for the coordinator at ``address``; output to its log.

    ``register``: a Python config file the worker runs first (``-c``), for the hooks and
    envs it registers. The modules the run's config names (``env.import_modules``,
    ``gym:module:Id``), which the pipeline checked are the user's, are given as ``--import``:
    a worker imports no module its start task names unless its command line allows it.
    ``rank_env``: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ... of one
    rank of a data-parallel learner (ranks above 0 log to ``<worker id>.rank<r>.log``).
    """
    env = dict(os.environ, DING_LITE_TOKEN=token, **(rank_env or {}))
    env.update(worker_thread_env(cfg.system, role))
    rank = int((rank_env or {}).get("RANK", 0))
    cmd = [
        sys.executable,
        "-m",
        "ding_lite",
        role,
        "--coordinator",
        address,
        "--worker-id",
        worker_id,
        "--heartbeat-period",
        str(cfg.system.heartbeat_period),
        "--master-timeout",
        str(cfg.system.master_timeout),
        *(["-c", register] if register else []),
        *(flag for module in named_env_modules(cfg.env) for flag in ("--import", module)),
        *(["--dist-timeout", str(cfg.system.dist_timeout)] if rank_env else []),
    ]
    name = f"{worker_id}.rank{rank}" if rank else worker_id
    log = open(log_dir / f"{name}.log", "ab")  # noqa: SIM115 (the child owns it)
    try:
        # A session of its own: a Ctrl-C in the terminal reaches the launcher only, which
        # then closes the workers in order.
        return subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    finally:
        log.close()


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Holds SIGINT and SIGTERM back for the block, then raises the first that came, under
    the handler the block found."""
    with signals_held() as arrived:
        yield
    if arrived:
        signal.raise_signal(arrived[0])


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL (a stopped process dies too) and reap, bounded."""
    if proc.poll() is None:
        proc.kill()
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            get_logger("launcher").error(f"process {proc.pid} did not die within 5 s of SIGKILL")


def stop_children(children: list[subprocess.Popen]) -> None:
    """Waits for closed workers to exit, then SIGTERM, then SIGKILL; all within ~10 s."""
    deadline = time.monotonic() + CHILD_STOP_S / 2
    for child in children:
        _wait(child, deadline)
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + CHILD_STOP_S / 2
    for child in children:
        _wait(child, deadline)
    for child in children:
        _kill(child)


def _wait(child: subprocess.Popen, deadline: float) -> None:
    try:
        child.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        pass
