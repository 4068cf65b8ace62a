"""The coordinator's process: per-role (``ding-lite coordinator``), or as the child of
``ding-lite parallel``'s supervisor (``--supervised``); both take a run back from the state
a killed coordinator saved (:mod:`ding_lite.coordinator.recovery`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_config, load_experiment
from ding_lite.coordinator import Coordinator
from ding_lite.coordinator.home import RunHome
from ding_lite.coordinator.recovery import RECOVERY_FILE, RecoveryError, RecoveryFile, address_of
from ding_lite.entry.launch.link import SupervisorLink
from ding_lite.entry.launch.local import LauncherTransport
from ding_lite.entry.reporting.run_report import (
    StatusPrinter,
    TbStatus,
    close_status,
    each,
    live_status,
    run_result,
)
from ding_lite.entry.run.lifecycle import RESULT_FILE, RunDir, shared_folders, tidy_data
from ding_lite.entry.run.result import read_result, summary
from ding_lite.entry.run.saved_config import load_saved_config
from ding_lite.interaction import Master, resolve_token
from ding_lite.interaction.addresses import reachable
from ding_lite.utils import stop
from ding_lite.utils.file_io import remove_stale_tmp
from ding_lite.utils.log import get_logger, setup_file_logging
from ding_lite.utils.stop import (
    EXIT_SIGINT,
    EXIT_SIGTERM,
    RunInterrupted,
    exit_code,
    interrupted_by,
    sigterm_interrupts,
)

DEREGISTER_WAIT_S = 3.0  # closed workers deregister within this, then the master stops


def start_master(
    cfg: Any, token: str, on_worker_lost: Any = None, run_path: Path | None = None
) -> Master:
    """Serves the coordinator's side of the protocol, as the config's system section says.

    ``on_worker_lost(worker_id)`` is told of each worker the master declares lost. On the
    http data plane it also keeps the learner's checkpoints in ``run_path``'s ``ckpt/``.
    """
    system = cfg.system

    def lost(worker: Any) -> None:
        _log_lost(worker)
        if on_worker_lost is not None:
            on_worker_lost(worker.worker_id)

    master = Master(
        token=token,
        host=system.host,
        port=_port(system.coordinator_port),
        heartbeat_tolerance=system.heartbeat_tolerance,
        task_timeout=system.task_timeout,
        max_body_bytes=system.max_body_bytes,
        on_register=_log_register,
        on_worker_lost=lost,
        client_timeout=(3.05, system.http_timeout),
        # Silence from every worker at once, some on other hosts, is this host cut off
        # (partitioned), not all of them dead: they wait master_timeout for it, so does it.
        cut_off_tolerance=system.master_timeout,
        check_callback=True,
    )
    if run_path is not None and system.data_plane == "http":
        ckpt, limit = run_path / "ckpt", system.max_rollout_bytes
        RunHome(master.files, ckpt, cfg.learner.keep_ckpts, limit, get_logger("coordinator"))
    return master.start()


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


def run_coordinator(cfg: Any, progress: bool = True, resuming: bool = False) -> dict[str, Any]:
    """Serves the coordinator and runs the protocol with workers that register themselves.

    Without a launcher nothing is restarted: a lost worker is dropped, and a lost learner is
    replaced by the next learner that registers within the join timeout. ``resuming``:
    ``cfg`` comes from ``compile_parallel_config(None, resume=EXP_DIR)``; when the run dir
    holds a coordinator's saved state (a coordinator that was killed), the run is taken
    back from it: at the address it served (unless ``--port`` says otherwise), with the
    workers still riding through their ``--master-timeout``.
    """
    token = resolve_token(cfg.system.token)
    say = print if progress else (lambda *a, **k: None)
    with (
        sigterm_interrupts(),
        RunDir.claim_parallel(cfg, resuming) as run_dir,
        run_dir.prepared(cfg, shared_folders(cfg)) as outcome,
    ):
        state, refused = saved_state(run_dir.path) if resuming else (None, False)
        if state is None:
            RecoveryFile(run_dir.path).discard()
        elif cfg.system.coordinator_port == "auto" and (address := address_of(state)):
            cfg.system.coordinator_port = int(address.rsplit(":", 1)[1])
        result, interrupted = coordinate(cfg, run_dir, token, say, state=state, rejoin=refused)
        outcome["failed"] = interrupted
        signal_name = interrupted_by()
    say(summary(result), flush=True)
    if interrupted:
        raise RunInterrupted(signal_name)
    return result


def run_supervised_coordinator(
    run_path: str, link_fd: int, port: int, register: str | None = None, quiet: bool = False
) -> int:
    """The coordinator of ``ding-lite parallel``, as its supervisor's child (see
    :mod:`~ding_lite.entry.launch.supervisor`): the run dir is prepared and locked by the
    supervisor, the workers are its children, and the run is taken back from the state a
    previous coordinator saved, if any. Returns the exit code."""
    if register:
        load_experiment(register)
    cfg = compile_config(load_saved_config(run_path))
    cfg.system.coordinator_port = port
    log_dir = Path(run_path) / "logs"
    handler = setup_file_logging(log_dir / "coordinator.log")
    link = SupervisorLink(link_fd)
    say = (lambda *a, **k: None) if quiet else print
    try:
        with sigterm_interrupts():
            result, interrupted = _coordinate_or_interrupted(
                cfg,
                RunDir.held_by_supervisor(run_path),
                resolve_token(None),
                say,
                state=saved_state(Path(run_path))[0],
                link=link,
            )
    finally:
        link.close()
        get_logger().removeHandler(handler)
        handler.close()
    if interrupted:
        return EXIT_SIGTERM if interrupted_by() == "SIGTERM" else EXIT_SIGINT
    return exit_code(result["stop_reason"])


def _coordinate_or_interrupted(*args: Any, **kwargs: Any) -> tuple[dict[str, Any], bool]:
    """:func:`coordinate`; an interruption before the run began counts as interrupted."""
    try:
        return coordinate(*args, **kwargs)
    except KeyboardInterrupt:  # before the coordinator ran: no result, nothing to close
        return {}, True


def saved_state(run_path: Path) -> tuple[dict[str, Any] | None, bool]:
    """The state a previous coordinator of the run saved (None: none, or damaged), and
    whether there was one that was refused as damaged."""
    remove_stale_tmp(run_path)  # a write it was killed in the middle of
    try:
        return RecoveryFile(run_path).load(), False
    except RecoveryError as err:
        get_logger("coordinator").warning(f"{err}; the run is not taken back from it")
        return None, True


def coordinate(
    cfg: Any,
    run_dir: RunDir,
    token: str,
    say: Any,
    state: dict[str, Any] | None = None,
    link: SupervisorLink | None = None,
    rejoin: bool = False,
) -> tuple[dict[str, Any], bool]:
    """Serves the master, runs the coordinator to the run's end and writes result.json.

    Returns ``(result, interrupted)``. ``link``: the supervisor's (restarts workers).
    ``state``: a previous coordinator's, to take the run back from; without one (or with
    one refused) a restarted coordinator (the supervisor's restart, or ``rejoin``) takes
    the run's workers back as they answer.
    """
    master = start_master(cfg, token, link.worker_lost if link else None, run_dir.path)
    if link is not None:
        link.ready(master.address)
    tb = None
    interrupted = False
    coordinator = None
    live = live_status(cfg, run_dir.path, master, lambda: coordinator)
    try:
        if link is None:
            shown, every = reachable(master.address)
            also = f" (listening on {master.address}: {', '.join(every)})" if len(every) > 1 else ""
            say(f"coordinator at {shown}; waiting for workers{also}", flush=True)
        coordinator = Coordinator(
            cfg,
            LauncherTransport(master, link) if link is not None else master,
            restarter=link,
            recovery=RecoveryFile(run_dir.path),
            address=master.address,
        )
        restarts = link.coordinator_restarts if link is not None else 0
        if not (state is not None and _take_back(coordinator, state, restarts, run_dir.path)):
            if restarts or rejoin:
                coordinator.rejoin(restarts)
        if link is not None:
            link.on_lost = lambda: coordinator.request_stop(stop.INTERRUPTED)
        start = time.perf_counter() - (time.time() - coordinator.state.started_at)
        printer = StatusPrinter(say, 5.0, master, start)
        tb = TbStatus(run_dir.path / "tb" / "coordinator", coordinator.status)
        coordinator.on_status = each(printer, tb)
        live.state = "running"
        try:
            coordinator.run(wait_workers=cfg.system.join_timeout)
        except KeyboardInterrupt:
            interrupted = True
        close_status(live, coordinator.status)
        tb.final(coordinator.status)  # the closing evaluation comes after the last iteration
    finally:
        live.stop()
        if tb is not None:
            tb.close()
        if link is not None:  # the supervisor's workers say goodbye before the master goes
            _wait_deregistered(master, DEREGISTER_WAIT_S)
        master.stop()
        tidy_data(Path(cfg.system.path_data))
    cpu = coordinator.state.cpu_s + time.process_time()
    result = run_result(cfg, coordinator.status, time.time() - coordinator.state.started_at, cpu)
    run_dir.write_result(result)
    coordinator.finish()
    return result, interrupted


def _wait_deregistered(master: Master, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while master.worker_ids() and time.monotonic() < deadline:
        time.sleep(0.05)


def _take_back(
    coordinator: Coordinator, state: dict[str, Any], restarts: int, run_path: Path
) -> bool:
    """Whether the run was taken back from ``state`` (else it was refused, in one line).
    A state that says the run finished needs the result it wrote."""
    try:
        if state.get("phase") == "finished" and read_result(run_path / RESULT_FILE) is None:
            raise RecoveryError(f"{RECOVERY_FILE}: phase 'finished' but no {RESULT_FILE}")
        coordinator.restore(state, restarts)
    except RecoveryError as err:
        coordinator.logger.warning(f"{err}; starting the run's coordination afresh")
        return False
    return True
