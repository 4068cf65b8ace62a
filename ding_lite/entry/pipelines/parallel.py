"""The parallel pipeline: a supervisor in this process, the coordinator, learners and
collectors as its children.

``parallel_pipeline`` (``ding-lite parallel``) starts everything on one machine and restarts
what fails, the coordinator included (:mod:`ding_lite.entry.launch`); the per-role commands
(:mod:`.coordinator_process`, :mod:`.worker_process`) start one role each, for runs that span
machines sharing a filesystem. The run dir is claimed once and held to the end, as in the
serial pipeline (:mod:`ding_lite.entry.run.lifecycle`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.coordinator.ledger import LEDGER_KEYS
from ding_lite.entry.launch.local import Launcher
from ding_lite.entry.launch.supervisor import CoordinatorFailed, RunSupervisor
from ding_lite.entry.pipelines.coordinator_process import run_coordinator
from ding_lite.entry.run.lifecycle import RunDir, resumable, shared_folders, tidy_data
from ding_lite.entry.run.options import RunOptions, compile_run_config, import_run_modules
from ding_lite.entry.run.result import summary
from ding_lite.interaction import generate_token
from ding_lite.league.book import check_parallel_league
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger, setup_file_logging
from ding_lite.utils.stop import RunInterrupted, interrupted_by, sigterm_interrupts

RAY_MISSING = (
    "--launcher ray needs Ray: pip install 'ray[default]' (in a ding_lite checkout: "
    "pip install -e '.[ray]')"
)


def compile_parallel_config(cfg: str | Mapping[str, Any] | None, *args: Any, **options: Any) -> Any:
    """Resolves a parallel run's config and refuses settings that cannot work, before
    anything is written; the run dir and the shared folders are placed when the run claims
    its dir (:meth:`~ding_lite.entry.run.lifecycle.RunDir.claim_parallel`).

    Takes the options of :class:`~ding_lite.entry.run.options.RunOptions` by keyword. With
    ``resume`` (an experiment dir) the run's saved config is used (``cfg``, if given, only
    registers what its file defines and must agree with it), overrides still apply, and the
    learner starts from the newest readable checkpoint. Rollout files left in the data
    folder are adopted; those collected with a policy newer than the checkpoint are
    dropped (``dropped_rollback``).
    """
    opts = RunOptions.of_call("compile_parallel_config", args, options, parallel=True)
    run_cfg = compile_run_config(cfg, opts)
    if run_cfg.system.launcher == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(RAY_MISSING)
    ranks = run_cfg.system.learners
    per_iter = run_cfg.policy.collect.n_steps * run_cfg.env.num_envs * run_cfg.system.collectors
    if min(run_cfg.policy.learn.batch_size, per_iter) % ranks:
        raise ConfigError(
            f"system.learners={ranks}: policy.learn.batch_size={run_cfg.policy.learn.batch_size} "
            "must split into equal parts, one per learner rank"
        )
    check_parallel_league(run_cfg)
    return run_cfg


def parallel_pipeline(
    cfg: str | Mapping[str, Any] | None = None,
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
        **options: keyword-only, those of :class:`~ding_lite.entry.run.options.RunOptions`:
            ``seed``, ``max_env_step``, ``max_train_iter``, ``overrides``, ``exp_dir``,
            ``device``, ``resume`` (the collectors start fresh episodes), ``learners``,
            ``collectors``, ``launcher``, ``ray_address``, ``import_modules`` (the modules
            the config names are imported here and by every worker; resuming, only those
            listed in ``import_modules``).

    Returns:
        The figures written to ``result.json`` (``stop_reason``, ``ledger``, ``restarts``...).

    Raises:
        TypeError: a positional argument after ``cfg``, or an unknown keyword.
        RunInterrupted: SIGINT or SIGTERM ended the run (after result.json was written).
    """
    # A Python config file also runs in every worker, so the hooks and envs it registers
    # exist there too.
    register = str(Path(cfg).resolve()) if isinstance(cfg, str) and cfg.endswith(".py") else None
    run_cfg = compile_parallel_config(cfg, *args, **options)
    # The modules that register the run's envs: imported here first (one line and nothing
    # started if one cannot be), then by every worker, whose command line names them.
    import_run_modules(run_cfg, RunOptions(**options))
    say = print if verbose else (lambda *a, **k: None)
    resuming = options.get("resume") is not None
    with sigterm_interrupts():  # from here on SIGTERM unwinds like Ctrl-C
        try:
            # Chosen and locked in one step and held to the end (the supervisor's
            # coordinator inherits the lock: see _run).
            with (
                RunDir.claim_parallel(run_cfg, resuming) as run_dir,
                run_dir.prepared(run_cfg, shared_folders(run_cfg)) as outcome,
            ):
                result, interrupted = _run(run_cfg, run_dir, say, status_interval, register)
                outcome["failed"] = interrupted
        except KeyboardInterrupt:
            run_path = Path(run_cfg.exp_dir) if run_cfg.exp_dir else None  # None: not claimed yet
            raise RunInterrupted(interrupted_by(), run_path and resumable(run_path)) from None
        signal_name = interrupted_by()
    say(summary(result), flush=True)
    if interrupted:
        raise RunInterrupted(signal_name, run_dir.resumable())
    return result


def _launcher_cls(cfg: Any) -> type[Launcher]:
    if cfg.system.launcher == "ray":
        from ding_lite.entry.launch.ray_actors import RayLauncher

        return RayLauncher
    return Launcher


def _run(
    cfg: Any, run_dir: RunDir, say: Any, status_interval: float, register: str | None = None
) -> tuple[dict[str, Any], bool]:
    """Supervises the run (:mod:`ding_lite.entry.launch.supervisor`); returns its result.json
    and whether it was interrupted."""
    log_dir = run_dir.path / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = setup_file_logging(log_dir / "coordinator.log")
    token = cfg.system.token or generate_token()
    quiet = say is not print
    assert run_dir.lock is not None  # claim_parallel locked the dir
    try:
        supervisor = RunSupervisor(
            cfg, _launcher_cls(cfg), token, register, quiet=quiet, lock_fd=run_dir.lock.fd
        )
        interrupted = supervisor.run(say)
    finally:
        tidy_data(Path(cfg.system.path_data))
        get_logger().removeHandler(handler)
        handler.close()
    result = supervisor.result()
    if result is None:  # no coordinator wrote this run's result.json (well formed)
        if interrupted:
            raise KeyboardInterrupt  # interrupted while the coordinator was starting
        raise CoordinatorFailed(
            f"the coordinator ended without a result; see {run_dir.path / 'logs'}/coordinator.log"
        )
    # The ledger in its own order (the file's keys are sorted), as the summary shows it.
    ledger, order = result.get("ledger") or {}, [*LEDGER_KEYS, "left_in_path_data"]
    result["ledger"] = {k: ledger[k] for k in sorted(ledger, key=lambda k: _rank(k, order))}
    run_dir.result_written(result)
    return result, interrupted


def _rank(key: str, order: list[str]) -> tuple[int, str]:
    return (order.index(key) if key in order else len(order), key)


__all__ = [
    "compile_parallel_config",
    "parallel_pipeline",
    "run_coordinator",
    "tidy_data",
]
