"""The parallel pipeline: a coordinator in this process, learners and collectors as children.

``parallel_pipeline`` (``ding-lite parallel``) starts everything on one machine and restarts
what fails (:mod:`.launch`); the per-role runners (:mod:`.roles`) start one role each, for
runs that span machines sharing a filesystem. The run dir is handled as in the serial
pipeline (:mod:`.lifecycle`).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.coordinator import Coordinator
from ding_lite.entry.launch.local import Launcher, LauncherTransport
from ding_lite.entry.lifecycle import RunDir, prepare_run_dir, resumable, summary, tidy_data
from ding_lite.entry.options import RunOptions, compile_run_config
from ding_lite.entry.roles import run_coordinator, run_worker, start_master
from ding_lite.entry.run_report import (
    StatusPrinter,
    TbStatus,
    close_status,
    each,
    live_status,
    run_result,
)
from ding_lite.interaction import generate_token
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger, setup_file_logging
from ding_lite.utils.stop import RunInterrupted, interrupted_by, sigterm_interrupts

RAY_MISSING = (
    "--launcher ray needs Ray: pip install 'ray[default]' (in a ding_lite checkout: "
    "pip install -e '.[ray]')"
)


def compile_parallel_config(cfg: str | Mapping | None, *args: Any, **options: Any) -> Any:
    """Resolves a parallel run's config; the run dir and shared folders become absolute.

    Takes the options of :class:`~ding_lite.entry.options.RunOptions` by keyword. With
    ``resume`` (an experiment dir) the run's saved config is used (``cfg``, if given, only
    registers what its file defines and must agree with it), overrides still apply, and the
    learner starts from the newest readable checkpoint. Rollout files left in the data
    folder are adopted; those collected with a policy newer than the checkpoint are
    dropped (``dropped_rollback``).
    """
    opts = RunOptions.of_call("compile_parallel_config", args, options, parallel=True)
    cfg = compile_run_config(cfg, opts)
    if cfg.system.launcher == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(RAY_MISSING)
    ranks = cfg.system.learners
    per_iter = cfg.policy.collect.n_steps * cfg.env.num_envs * cfg.system.collectors
    if min(cfg.policy.learn.batch_size, per_iter) % ranks:
        raise ConfigError(
            f"system.learners={ranks}: policy.learn.batch_size={cfg.policy.learn.batch_size} "
            "must split into equal parts, one per learner rank"
        )
    # Only a free folder is chosen (a live run's dir is refused, naming its pid); the run
    # locks it again in prepare_run_dir, which refuses it if a run took it in between.
    run_dir = RunDir.claim(cfg, resuming=opts.resume is not None)
    if run_dir.lock.created:
        run_dir.lock.discard()  # prepare_run_dir creates it again
    run_dir.release()
    path = run_dir.path.resolve()
    cfg.exp_dir = str(path)
    cfg.system.path_data = str(Path(cfg.system.path_data or path / "data").resolve())
    cfg.system.path_policy = str(Path(cfg.system.path_policy or path / "policy").resolve())
    return cfg


def parallel_pipeline(
    cfg: str | Mapping | None = None,
    *args: Any,
    verbose: int = 1,
    status_interval: float = 5.0,
    **options: Any,
) -> dict[str, Any]:
    """Trains with a coordinator, learner and collector processes on this machine.

    Args:
        cfg: a bundled experiment name (``"cartpole_ppo_parallel"``), a config file or dict
            (None with ``resume=``).
        verbose: 1 (default) prints where logs go, a status line every ``status_interval``
            seconds and the closing summary; 0 prints nothing.
        status_interval: seconds between status lines.
        **options: keyword-only, those of :class:`~ding_lite.entry.options.RunOptions`:
            ``seed``, ``max_env_step``, ``max_train_iter``, ``overrides``, ``exp_dir``,
            ``device``, ``resume`` (the collectors start fresh episodes), ``learners``,
            ``collectors``, ``launcher``, ``ray_address``.

    Returns:
        The figures written to ``result.json`` (``stop_reason``, ``ledger``, ``restarts``...).

    Raises:
        TypeError: a positional argument after ``cfg``, or an unknown keyword.
        RunInterrupted: SIGINT or SIGTERM ended the run (after result.json was written).
    """
    # A Python config file also runs in every worker, so the hooks and envs it registers
    # exist there too.
    register = str(Path(cfg).resolve()) if isinstance(cfg, str) and cfg.endswith(".py") else None
    cfg = compile_parallel_config(cfg, *args, **options)
    resuming = options.get("resume") is not None
    run_dir = Path(cfg.exp_dir)
    say = print if verbose else (lambda *a, **k: None)
    with sigterm_interrupts():  # from here on SIGTERM unwinds like Ctrl-C
        try:
            with prepare_run_dir(cfg, resuming, _shared_folders(cfg)) as outcome:
                result, interrupted = _run(cfg, outcome, say, status_interval, register)
                outcome["failed"] = interrupted
        except KeyboardInterrupt:
            raise RunInterrupted(interrupted_by(), resumable(run_dir)) from None
        signal_name = interrupted_by()
    say(summary(result), flush=True)
    if interrupted:
        raise RunInterrupted(signal_name, resumable(run_dir))
    return result


def _shared_folders(cfg: Any) -> tuple[str, str]:
    """The folders a parallel run shares with its workers (temp files there are cleared)."""
    return cfg.system.path_policy, cfg.system.path_data


def _launcher_cls(cfg: Any) -> type[Launcher]:
    if cfg.system.launcher == "ray":
        from ding_lite.entry.launch.ray_actors import RayLauncher

        return RayLauncher
    return Launcher


def _run(
    cfg: Any, outcome: dict, say: Any, status_interval: float, register: str | None = None
) -> tuple[dict, bool]:
    run_dir: RunDir = outcome["run_dir"]
    token = cfg.system.token or generate_token()
    log_dir = run_dir.path / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = setup_file_logging(log_dir / "coordinator.log")
    start = time.perf_counter()
    launcher: Launcher | None = None  # no worker can be lost before the launcher exists

    def on_worker_lost(worker_id: str) -> None:
        if launcher is not None:
            launcher.worker_lost(worker_id)

    master = start_master(cfg, token, on_worker_lost)
    launcher = _launcher_cls(cfg)(cfg, master.address, token, log_dir, register)
    tb: TbStatus | None = None
    interrupted = False
    coordinator: Coordinator | None = None
    live = live_status(cfg, run_dir.path, master, lambda: coordinator)
    try:
        say(f"coordinator at {master.address}; logs in {log_dir}")
        launcher.start_all()
        printer = StatusPrinter(say, status_interval, master, start)
        tb = TbStatus(run_dir.path / "tb" / "coordinator")
        coordinator = Coordinator(
            cfg,
            LauncherTransport(master, launcher),
            on_status=each(printer, tb),
            supervisor=launcher,
        )
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
        launcher.stop_all()
        master.stop()
        tidy_data(Path(cfg.system.path_data))
        get_logger().removeHandler(handler)
        handler.close()
    status = coordinator.status if coordinator is not None else None
    result = run_result(cfg, status, time.perf_counter() - start)
    run_dir.write_result(result)
    return result, interrupted


__all__ = [
    "compile_parallel_config",
    "parallel_pipeline",
    "prepare_run_dir",
    "run_coordinator",
    "run_worker",
    "tidy_data",
]
