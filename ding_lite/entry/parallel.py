"""The parallel pipeline: a coordinator in this process, learners and collectors as children.

``parallel_pipeline`` (``ding-lite parallel``) starts everything on one machine and restarts
what fails (:mod:`.launcher`); the per-role runners (:mod:`.roles`) start one role each, for
runs that span machines sharing a filesystem.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_config, deep_merge_dicts
from ding_lite.coordinator import Coordinator
from ding_lite.data.files import remove_temp_files
from ding_lite.entry.launcher import Launcher, LauncherTransport
from ding_lite.entry.roles import run_coordinator, run_worker, sigterm_as_interrupt, start_master
from ding_lite.entry.run_dir import (
    claim_exp_dir,
    ensure_free,
    lock_exp_dir,
    resume_afresh,
    resume_config,
    save_config,
    write_result,
)
from ding_lite.entry.run_report import StatusPrinter, TbStatus, each, run_result, summary
from ding_lite.interaction import generate_token
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger, setup_file_logging
from ding_lite.utils.stop import RunInterrupted
from ding_lite.worker.learner import latest_checkpoint


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
    launcher: str | None = None,
    ray_address: str | None = None,
) -> Any:
    """Resolves a parallel run's config; the run dir and shared folders become absolute.

    With ``resume`` (an experiment dir) the run's saved config is used (``cfg``, if given,
    only registers what its file defines and must agree with it), overrides still apply,
    and the learner starts from the newest readable checkpoint. Rollout files left in the
    data folder are adopted; those collected with a policy newer than the checkpoint are
    dropped (``dropped_rollback``).
    """
    if resume is not None:
        cfg = resume_config(resume, cfg)
        ensure_free(resume)
        exp_dir = str(resume)
    elif cfg is None:
        raise ConfigError("a parallel run needs a config (or resume=EXP_DIR)")
    extra = list(overrides) if not isinstance(overrides, Mapping) else []
    if learners is not None:
        extra.append(f"system.learners={learners}")
    if collectors is not None:
        extra.append(f"system.collectors={collectors}")
    if launcher is not None:
        extra.append(f"system.launcher={launcher}")
    if ray_address is not None:
        extra.append(f"system.ray_address={ray_address}")
    cfg = compile_config(
        cfg,
        overrides if isinstance(overrides, Mapping) else extra,
        seed=seed,
        exp_dir=exp_dir,
        device=device,
        max_env_step=max_env_step,
        max_train_iter=max_train_iter,
    )
    if cfg.system.launcher == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError("--launcher ray needs Ray: pip install 'ding-lite[ray]'")
    ranks = cfg.system.learners
    per_iter = cfg.policy.collect.n_steps * cfg.env.num_envs * cfg.system.collectors
    if min(cfg.policy.learn.batch_size, per_iter) % ranks:
        raise ConfigError(
            f"system.learners={ranks}: policy.learn.batch_size={cfg.policy.learn.batch_size} "
            "must split into equal parts, one per learner rank"
        )
    if resume is not None and latest_checkpoint(Path(resume) / "ckpt") is not None:
        hook = {"load_ckpt_before_run": str((Path(resume) / "ckpt").resolve())}
        cfg.learner.hook = deep_merge_dicts(cfg.learner.hook, hook)
    elif resume is not None:
        resume_afresh(resume)
    # Only a free folder is chosen (a live run's dir is refused, naming its pid); the run
    # locks it again in prepare_run_dir, which refuses it if a run took it in between.
    lock = claim_exp_dir(cfg, resuming=resume is not None)
    run_dir = lock.path.resolve()
    if lock.created:
        lock.discard()  # prepare_run_dir creates it again
    else:
        lock.release()
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
    launcher: str | None = None,
    ray_address: str | None = None,
    progress: bool = False,
    status_interval: float = 5.0,
) -> dict[str, Any]:
    """Trains with a coordinator, learner and collector processes on this machine.

    Args:
        cfg: a bundled experiment name (``"cartpole_ppo_parallel"``), a config file or dict.
        seed, overrides, exp_dir, device, max_env_step, max_train_iter: as for
            :func:`serial_pipeline`.
        learners, collectors: ranks of the data-parallel learner (``system.learners``) and
            collector workers (``system.collectors``).
        launcher: "local" (child processes) or "ray" (Ray actors; ``system.launcher``), and
            ``ray_address`` the Ray cluster to join (``system.ray_address``; default: a local
            Ray instance for the run).
        resume: an experiment dir to continue (a ``cfg`` beside it only registers what
            its file defines, and must agree with the saved config): its saved config
            and newest readable checkpoint (weights, optimizer, iteration and env-step
            counts). The collectors start fresh episodes.
        progress: print where logs go and a status line every ``status_interval`` seconds.

    Returns:
        The figures written to ``result.json`` (``stop_reason``, ``ledger``, ``restarts``...).

    Raises:
        RunInterrupted: SIGINT or SIGTERM ended the run (after result.json was written).
    """
    # A Python config file also runs in every worker, so the hooks and envs it registers
    # exist there too.
    register = str(Path(cfg).resolve()) if isinstance(cfg, str) and cfg.endswith(".py") else None
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
        launcher=launcher,
        ray_address=ray_address,
    )
    run_dir = Path(cfg.exp_dir)
    say = print if progress else (lambda *a, **k: None)
    seen: list[str] = []
    previous = sigterm_as_interrupt(seen)  # from here on SIGTERM unwinds like Ctrl-C
    try:
        with prepare_run_dir(cfg, resume is not None) as outcome:
            result, interrupted = _run(cfg, run_dir, say, status_interval, register)
            outcome["failed"] = interrupted
    except KeyboardInterrupt:
        raise RunInterrupted(seen[0] if seen else "SIGINT", _resumable(run_dir)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    say(summary(result))
    if interrupted:
        raise RunInterrupted(seen[0] if seen else "SIGINT", _resumable(run_dir))
    return result


def _launcher_cls(cfg: Any) -> type[Launcher]:
    if cfg.system.launcher == "ray":
        from ding_lite.entry.ray_launcher import RayLauncher

        return RayLauncher
    return Launcher


def _resumable(run_dir: Path) -> Path | None:
    """The run dir when it holds a checkpoint to resume from."""
    ckpt = run_dir / "ckpt"
    return run_dir if ckpt.is_dir() and latest_checkpoint(ckpt) else None


def _run(
    cfg: Any, run_dir: Path, say: Any, status_interval: float, register: str | None = None
) -> tuple[dict, bool]:
    token = cfg.system.token or generate_token()
    log_dir = run_dir / "logs"
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
    try:
        say(f"coordinator at {master.address}; logs in {log_dir}")
        launcher.start_all()
        printer = StatusPrinter(say, status_interval, master, start)
        tb = TbStatus(run_dir / "tb" / "coordinator")
        coordinator = Coordinator(
            cfg,
            LauncherTransport(master, launcher),
            on_status=each(printer, tb),
            supervisor=launcher,
        )
        try:
            coordinator.run(wait_workers=cfg.system.join_timeout)
        except KeyboardInterrupt:
            interrupted = True
    finally:
        if tb is not None:
            tb.close()
        launcher.stop_all()
        master.stop()
        tidy_data(Path(cfg.system.path_data))
        get_logger().removeHandler(handler)
        handler.close()
    status = coordinator.status if coordinator is not None else None
    result = run_result(cfg, status, time.perf_counter() - start)
    write_result(result, run_dir)
    return result, interrupted


@contextlib.contextmanager
def prepare_run_dir(cfg: Any, resuming: bool) -> Iterator[dict[str, bool]]:
    """Holds the run dir's lock for the run; clears what a killed run left half-written.

    A new run that fails (an exception, or ``outcome["failed"]`` set by the caller, e.g.
    when interrupted) before its first checkpoint removes what it put in the dir, so the
    same command can simply be run again.

    Raises:
        ExpDirInUse: a live run holds the dir.
        ConfigError: a run started in the dir since it was chosen (and this is no resume).
    """
    run_dir = Path(cfg.exp_dir)
    lock = lock_exp_dir(run_dir)
    if not resuming and (run_dir / "config.json").exists():
        lock.release()
        raise ConfigError(f"{run_dir} already holds a run (one started there just now)")
    outcome = {"failed": True}
    try:
        for folder in (run_dir / "ckpt", Path(cfg.system.path_policy), Path(cfg.system.path_data)):
            remove_temp_files(folder)
        save_config(cfg, run_dir)
        yield outcome
    finally:
        if outcome["failed"] and not resuming and latest_checkpoint(run_dir / "ckpt") is None:
            lock.discard()
        lock.release()


def tidy_data(path_data: Path) -> None:
    """Removes temp files (a collector killed mid-write) and empty collector folders.

    Complete rollout files are never deleted here: the ledger accounts for each of them.
    """
    if not path_data.is_dir():
        return
    for folder in [path_data, *(p for p in path_data.iterdir() if p.is_dir())]:
        remove_temp_files(folder)
        if folder != path_data and not any(folder.iterdir()):
            folder.rmdir()


__all__ = [
    "compile_parallel_config",
    "parallel_pipeline",
    "prepare_run_dir",
    "run_coordinator",
    "run_worker",
    "tidy_data",
]
