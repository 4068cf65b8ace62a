"""The parallel pipeline: a coordinator in this process, learners and collectors as children.

``parallel_pipeline`` (``ding-lite parallel``) starts everything on one machine. The per-role
runners (``ding-lite coordinator|learner|collector``) start one role each, for runs that
span machines sharing a filesystem.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_config, deep_merge_dicts
from ding_lite.coordinator import Coordinator, RunStatus
from ding_lite.entry.run_dir import choose_exp_dir, load_saved_config, save_config, write_result
from ding_lite.interaction import Master, Slave, generate_token, resolve_token
from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.utils.log import (
    build_tb_logger,
    get_logger,
    setup_console_logging,
    setup_file_logging,
)
from ding_lite.utils.stats import count_outcomes
from ding_lite.worker.collector.comm import FlaskFileSystemCollector
from ding_lite.worker.learner import latest_checkpoint
from ding_lite.worker.learner.comm import FlaskFileSystemLearner

STATS_WINDOW = 100  # training episodes behind the status line's and result's win rate
CHILD_STOP_S = 8.0  # children get this long to exit before they are killed
WORKER_SWITCH_INTERVAL_S = 0.0005  # a worker's GIL switch interval (Python's default: 5 ms)


def compile_parallel_config(
    cfg: str | Mapping,
    *,
    seed: int | None = None,
    overrides: Iterable[str] | Mapping = (),
    exp_dir: str | None = None,
    device: str | None = None,
    learners: int | None = None,
    collectors: int | None = None,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
    resume: str | Path | None = None,
) -> Any:
    """Resolves a parallel run's config; the run dir and shared folders become absolute.

    With ``resume`` (an experiment dir) ``cfg`` must be None: the run's saved config is
    used, overrides still apply, and the learner starts from the newest checkpoint. What
    was collected but not learned from is dropped: the shared data folder is emptied.
    """
    if resume is not None:
        if cfg is not None:
            raise ConfigError("pass either a config or resume=EXP_DIR, not both")
        cfg = load_saved_config(resume)
        exp_dir = str(resume)
        ckpt = Path(resume) / "ckpt"
        if latest_checkpoint(ckpt) is None:
            raise CheckpointError(f"cannot resume {resume}: no checkpoint in {ckpt}")
    elif cfg is None:
        raise ConfigError("a parallel run needs a config (or resume=EXP_DIR)")
    extra = list(overrides) if not isinstance(overrides, Mapping) else []
    if learners is not None:
        extra.append(f"system.learners={learners}")
    if collectors is not None:
        extra.append(f"system.collectors={collectors}")
    cfg = compile_config(
        cfg,
        overrides if isinstance(overrides, Mapping) else extra,
        seed=seed,
        exp_dir=exp_dir,
        device=device,
        max_env_step=max_env_step,
        max_train_iter=max_train_iter,
    )
    if cfg.system.learners != 1:
        raise ConfigError("system.learners: only 1 learner is supported for now")
    if resume is not None:
        hook = {"load_ckpt_before_run": str((Path(resume) / "ckpt").resolve())}
        cfg.learner.hook = deep_merge_dicts(cfg.learner.hook, hook)
    run_dir = choose_exp_dir(cfg, resuming=resume is not None).resolve()
    cfg.exp_dir = str(run_dir)
    cfg.system.path_data = str(Path(cfg.system.path_data or run_dir / "data").resolve())
    cfg.system.path_policy = str(Path(cfg.system.path_policy or run_dir / "policy").resolve())
    return cfg


def parallel_pipeline(
    cfg: str | Mapping | None = None,
    seed: int | None = None,
    *,
    overrides: Iterable[str] | Mapping = (),
    exp_dir: str | None = None,
    device: str | None = None,
    learners: int | None = None,
    collectors: int | None = None,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
    resume: str | Path | None = None,
    progress: bool = False,
    status_interval: float = 5.0,
) -> dict[str, Any]:
    """Trains with a coordinator, learner and collector processes on this machine.

    Args:
        cfg: a bundled experiment name (``"cartpole_ppo_parallel"``), a config file or dict.
        seed, overrides, exp_dir, device, max_env_step, max_train_iter: as for
            :func:`serial_pipeline`.
        learners, collectors: worker processes (``system.learners`` / ``system.collectors``).
        resume: an experiment dir to continue (then ``cfg`` must be None): its saved config
            and newest checkpoint (weights, optimizer, iteration and env-step counts). The
            collectors start fresh episodes; rollouts not yet learned from are dropped.
        progress: print where logs go and a status line every ``status_interval`` seconds.

    Returns:
        The figures written to ``result.json``.
    """
    cfg = compile_parallel_config(
        cfg,
        seed=seed,
        overrides=overrides,
        exp_dir=exp_dir,
        device=device,
        learners=learners,
        collectors=collectors,
        max_env_step=max_env_step,
        max_train_iter=max_train_iter,
        resume=resume,
    )
    run_dir = Path(cfg.exp_dir)
    if resume is not None:
        _clean_data(Path(cfg.system.path_data))  # rollouts of the crashed run: not learned
    token = cfg.system.token or generate_token()
    save_config(cfg, run_dir)
    log_dir = run_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = setup_file_logging(log_dir / "coordinator.log")
    say = print if progress else (lambda *a, **k: None)
    start = time.perf_counter()
    master = _start_master(cfg, token)
    children: dict[str, subprocess.Popen] = {}
    status = RunStatus()
    tb: _TbStatus | None = None
    interrupted = False
    try:
        say(f"coordinator at {master.address}; logs in {log_dir}")
        roles = ["learner"] * cfg.system.learners + ["collector"] * cfg.system.collectors
        counts: dict[str, int] = {}
        for role in roles:
            worker_id = f"{role}{counts.setdefault(role, 0)}"
            counts[role] += 1
            children[worker_id] = _spawn(role, worker_id, master.address, token, cfg, log_dir)
        printer = _StatusPrinter(say, status_interval, master, start)
        tb = _TbStatus(run_dir / "tb" / "coordinator")
        coordinator = Coordinator(cfg, _Transport(master, children), on_status=_each(printer, tb))
        status = coordinator.status
        previous = _sigterm_as_interrupt()
        try:
            status = coordinator.run(wait_workers=120.0)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        if tb is not None:
            tb.close()
        _stop_children(list(children.values()))
        master.stop()
        _clean_data(Path(cfg.system.path_data))
        get_logger().removeHandler(handler)
        handler.close()
    wall = time.perf_counter() - start
    result = _result(cfg, status, wall)
    write_result(result, run_dir)
    say(_summary(result))
    if interrupted:
        raise KeyboardInterrupt
    return result


def _start_master(cfg: Any, token: str) -> Master:
    """Serves the coordinator's side of the protocol, as the config's system section says."""
    system = cfg.system
    return Master(
        token=token,
        host=system.host,
        port=_port(system.coordinator_port),
        heartbeat_tolerance=system.heartbeat_tolerance,
        task_timeout=system.task_timeout,
        max_body_bytes=system.max_body_bytes,
        on_register=_log_register,
        on_worker_lost=_log_lost,
        client_timeout=(3.05, system.http_timeout),
    ).start()


def _log_register(worker: Any) -> None:
    get_logger("coordinator").info(
        f"{worker.role} {worker.worker_id} registered at {worker.address}"
    )


def _log_lost(worker: Any) -> None:
    get_logger("coordinator").warning(
        f"{worker.role} {worker.worker_id} lost: no heartbeat for "
        f"{time.monotonic() - worker.last_seen:.1f} s"
    )


def _port(value: Any) -> int:
    return 0 if value == "auto" else int(value)


class _Transport:
    """The Master, seen by the coordinator; a worker whose process died counts as gone at
    once, before its heartbeats run out."""

    def __init__(self, master: Master, children: dict[str, subprocess.Popen]) -> None:
        self.master = master
        self.children = children

    def worker_ids(self, role: str) -> list[str]:
        ids = self.master.worker_ids(role)
        return [w for w in ids if w not in self.children or self.children[w].poll() is None]

    def send_task(self, worker_id: str, name: str, data: dict, timeout: float):
        return self.master.send_task(worker_id, name, data, timeout=timeout)


class _StatusPrinter:
    """Prints one status line every ``interval`` seconds."""

    def __init__(self, say: Any, interval: float, master: Master, start: float) -> None:
        self.say, self.interval, self.master, self.start = say, interval, master, start
        self._last = start

    def __call__(self, status: RunStatus) -> None:
        now = time.perf_counter()
        if now - self._last < self.interval:
            return
        self._last = now
        elapsed = now - self.start
        alive = len(self.master.worker_ids())
        eval_text = "-" if status.eval_return is None else f"{status.eval_return:.1f}"
        outcomes = status.episode_outcomes[-STATS_WINDOW:]
        win_text = f"win={_win_rate(outcomes):.0%} " if outcomes else ""
        self.say(
            f"envstep={status.envstep} SPS={status.envstep / elapsed:,.0f} "
            f"iter={status.train_iter} policy=v{status.policy_version} "
            f"lag={status.policy_lag:.2f} eval_return={eval_text} {win_text}"
            f"workers_alive={alive} elapsed={elapsed:.1f}s",
            flush=True,
        )


def _each(*callbacks: Any) -> Any:
    """One status callback that calls each of ``callbacks`` in turn."""

    def call(status: RunStatus) -> None:
        for callback in callbacks:
            callback(status)

    return call


class _TbStatus:
    """Writes the run-wide figures only the coordinator sees to ``<exp_dir>/tb/coordinator``.

    After every iteration, against the run's env steps: ``charts/episodic_return`` (mean
    of the training episodes reported since the last call), ``charts/win_rate``,
    ``charts/loss_rate`` and ``charts/draw_rate`` (last 100 training episodes, for envs that
    report outcomes), ``charts/eval_return`` and ``charts/eval_win_rate`` (when a new
    evaluation came in), ``charts/SPS`` and ``charts/policy_lag``. The learner's own
    figures are in ``tb/<learner id>``.
    """

    def __init__(self, log_dir: Path) -> None:
        self.writer = build_tb_logger(log_dir)
        self._returns_seen = 0
        self._eval: tuple[float | None, float | None] = (None, None)
        self._start = time.perf_counter()

    def __call__(self, status: RunStatus) -> None:
        step, add = status.envstep, self.writer.add_scalar
        new_returns = status.episode_returns[self._returns_seen :]
        self._returns_seen = len(status.episode_returns)
        if new_returns:
            add("charts/episodic_return", statistics.fmean(new_returns), step)
        outcomes = status.episode_outcomes[-STATS_WINDOW:]
        if outcomes:
            for name, rate in count_outcomes(outcomes).rates().items():
                add(f"charts/{name}", rate, step)
        evaluation = (status.eval_return, status.eval_win_rate)
        if evaluation != self._eval and status.eval_return is not None:
            add("charts/eval_return", status.eval_return, step)
            if status.eval_win_rate is not None:
                add("charts/eval_win_rate", status.eval_win_rate, step)
        self._eval = evaluation
        add("charts/SPS", step / max(time.perf_counter() - self._start, 1e-9), step)
        add("charts/policy_lag", status.policy_lag, step)

    def close(self) -> None:
        self.writer.close()


def _spawn(
    role: str, worker_id: str, address: str, token: str, cfg: Any, log_dir: Path
) -> subprocess.Popen:
    env = dict(os.environ, DING_LITE_TOKEN=token)
    if "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = str(_worker_threads(role, cfg.system.collectors))
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
    ]
    log = open(log_dir / f"{worker_id}.log", "ab")  # noqa: SIM115 (the child owns it)
    try:
        # A session of its own: a Ctrl-C in the terminal reaches the launcher only, which
        # then closes the workers in order.
        return subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    finally:
        log.close()


def _worker_threads(role: str, collectors: int) -> int:
    """Intra-op threads of a worker process on this machine.

    Collectors step small batches: one thread each. The learner gets the cores the
    collectors leave, at least one: threads that outnumber the free cores wait on each
    other at every op's barrier. On 2 cores, one learner thread instead of two made the
    learn task of ``pendulum_ppo_parallel`` about 15% shorter while a collector ran beside
    it, and an update alone is no faster on two threads.
    """
    if role == "collector":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) - collectors)


def _stop_children(children: list[subprocess.Popen]) -> None:
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
        if child.poll() is None:
            child.kill()
            child.wait(timeout=2.0)


def _wait(child: subprocess.Popen, deadline: float) -> None:
    try:
        child.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        pass


def _sigterm_as_interrupt() -> Any:
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        return signal.signal(signal.SIGTERM, handler)
    return signal.getsignal(signal.SIGTERM)


def _clean_data(path_data: Path) -> None:
    """Removes rollout files nobody will read (e.g. left by a collector that died mid-write)."""
    if not path_data.is_dir():
        return
    for leftover in path_data.rglob("*"):
        if leftover.is_file():
            leftover.unlink(missing_ok=True)
    for folder in sorted(path_data.glob("*"), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def _steady_sps(status: RunStatus) -> float | None:
    """Env steps per second from the first update to the end (start-up left out)."""
    if status.first_learn_at is None:
        return None
    seconds = time.perf_counter() - status.first_learn_at
    return round((status.envstep - status.first_learn_envstep) / max(seconds, 1e-9), 1)


def _win_rate(outcomes: list[float]) -> float | None:
    """Share of wins among episode outcomes (+1 win, -1 loss, 0 draw); None if none."""
    return count_outcomes(outcomes).rates()["win_rate"] if outcomes else None


def _result(cfg: Any, status: RunStatus, wall: float) -> dict[str, Any]:
    returns = status.episode_returns[-20:]
    return {
        "exp_name": cfg.exp_name,
        "exp_dir": cfg.exp_dir,
        "env": cfg.env.name,
        "seed": cfg.seed,
        "solved": status.solved,
        "stop_reason": status.stop_reason,
        "stop_value": cfg.evaluator.stop_value,
        "eval_return_mean": status.eval_return,
        "train_return_mean": statistics.fmean(returns) if returns else None,
        "eval_win_rate": status.eval_win_rate,
        "train_win_rate": _win_rate(status.episode_outcomes[-STATS_WINDOW:]),
        "envstep": status.envstep,
        "train_iter": status.train_iter,
        "policy_version": status.policy_version,
        "dropped": status.dropped,
        "failed_tasks": status.failed_tasks,
        "wall_s": round(wall, 3),
        "sps": round(status.envstep / max(wall, 1e-9), 1),
        "steady_sps": _steady_sps(status),
        "control_p50_s": _percentile(status.control_latency_s, 0.5),
        "control_p99_s": _percentile(status.control_latency_s, 0.99),
        "policy_sync_p50_s": _percentile(status.sync_latency_s, 0.5),
        "policy_sync_p99_s": _percentile(status.sync_latency_s, 0.99),
        "collectors": cfg.system.collectors,
        "learners": cfg.system.learners,
    }


def _summary(result: dict[str, Any]) -> str:
    state = "solved" if result["solved"] else f"not solved ({result['stop_reason']})"
    ev, win = result["eval_return_mean"], result["eval_win_rate"]
    win_text = "" if win is None else f" (win rate {win:.1%})"
    return (
        f"{state}: eval return {'-' if ev is None else f'{ev:.2f}'}{win_text}, "
        f"{result['envstep']} env "
        f"steps, {result['train_iter']} iterations, {result['wall_s']:.1f} s "
        f"({result['sps']:,.0f} SPS)"
    )


# --- per-role runners (one machine each) -----------------------------------------------
def run_coordinator(cfg: Any, progress: bool = True, resuming: bool = False) -> dict[str, Any]:
    """Serves the coordinator and runs the protocol with workers that register themselves.

    ``resuming``: ``cfg`` comes from ``compile_parallel_config(None, resume=EXP_DIR)``; the
    data folder's leftovers are dropped first.
    """
    token = resolve_token(cfg.system.token)
    run_dir = Path(cfg.exp_dir)
    if resuming:
        _clean_data(Path(cfg.system.path_data))
    save_config(cfg, run_dir)
    say = print if progress else (lambda *a, **k: None)
    start = time.perf_counter()
    master = _start_master(cfg, token)
    try:
        say(f"coordinator at {master.address}; waiting for workers", flush=True)
        printer = _StatusPrinter(say, 5.0, master, start)
        tb = _TbStatus(run_dir / "tb" / "coordinator")
        previous = _sigterm_as_interrupt()
        try:
            status = Coordinator(cfg, master, on_status=_each(printer, tb)).run(wait_workers=3600.0)
        finally:
            signal.signal(signal.SIGTERM, previous)
            tb.close()
    finally:
        master.stop()
        _clean_data(Path(cfg.system.path_data))
    result = _result(cfg, status, time.perf_counter() - start)
    write_result(result, run_dir)
    say(_summary(result))
    return result


def _preload_optimizer_imports() -> None:
    """Imports now what torch imports when a process builds its first optimizer.

    That is ``torch._dynamo``, about 2 s of CPU. A learner cannot train before it is done,
    so doing it before registering costs the run no time; left to the first update, it
    would run while the collectors collect and answer their first tasks.
    """
    try:
        importlib.import_module("torch._dynamo")
    except ImportError:  # a torch without it builds optimizers without it
        pass


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
) -> int:
    """Runs one learner or collector until the coordinator closes it (or SIGTERM/SIGINT).

    The worker also stops when the coordinator has not answered its heartbeats for
    ``master_timeout`` seconds, so a crashed launcher leaves no worker behind for long.
    """
    token = resolve_token(token)
    worker_cls = {"learner": FlaskFileSystemLearner, "collector": FlaskFileSystemCollector}[role]

    def slave(handlers: dict) -> Slave:
        return Slave(
            role,
            worker_id,
            coordinator,
            handlers=handlers,
            token=token,
            host=host,
            port=port,
            advertise_address=advertise,
            heartbeat_period=heartbeat_period,
        )

    setup_console_logging(logging.INFO)  # the launcher sends a worker's stderr to its log
    # A task is handled by the HTTP threads while the training or collection thread keeps
    # the GIL busy; at Python's default 5 ms switch interval each hand-over between them
    # can wait that long, and a task round trip has several.
    sys.setswitchinterval(WORKER_SWITCH_INTERVAL_S)
    if role == "learner":
        _preload_optimizer_imports()
    worker = worker_cls(worker_id=worker_id, device=device, slave_factory=slave)
    previous = _sigterm_as_interrupt()
    try:
        worker.start()
        while not worker.closed.wait(0.2):
            silent = time.monotonic() - worker.slave.last_contact
            if silent > master_timeout:
                get_logger(role).error(
                    f"the coordinator has not answered for {silent:.0f} s; stopping"
                )
                return 1
        time.sleep(0.3)  # let the close task's result reach the coordinator
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        worker.close()
    return 0
