"""The life of one run in its experiment dir, the same for the serial and parallel pipelines.

A run claims its dir (:meth:`RunDir.claim`: chosen and locked in one step), resumes from
the newest checkpoint there when asked (:func:`resume_from_checkpoint`), prepares the dir
(:meth:`RunDir.prepare`: clears what a killed run left half-written, writes config.json),
trains, tidies ``path_data`` (:func:`tidy_data`), and reports: :func:`build_result` makes
``result.json`` (written only by :meth:`RunDir.write_result`) and :func:`summary` the
closing lines. A new run that fails before it trained removes what it created
(:meth:`RunDir.discard_if_untrained`), so the same command can simply be run again.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from easydict import EasyDict

from ding_lite.config.config import deep_merge_dicts
from ding_lite.entry.run_dir import ExpDirLock, claim_exp_dir, lock_exp_dir, save_config
from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.utils.file_io import atomic_write_json, remove_stale_tmp
from ding_lite.utils.log import get_logger
from ding_lite.utils.paths import BEST_CKPT
from ding_lite.utils.stop import STOP_REASONS, exit_code
from ding_lite.utils.wandb_mirror import WandbMirror, check_wandb

RESULT_FILE = "result.json"


def resume_from_checkpoint(cfg: EasyDict, exp_dir: str | Path) -> None:
    """Points the learner of a resumed run at the newest checkpoint of ``exp_dir``.

    A run that has none yet (killed before its first checkpoint, no result.json) starts
    afresh in its dir; unreadable checkpoints are skipped when the learner loads.

    Raises:
        CheckpointError: the run finished without leaving a checkpoint.
    """
    from ding_lite.worker.learner.checkpoint import latest_checkpoint  # torch: not at import

    ckpt = (Path(exp_dir) / "ckpt").resolve()
    if latest_checkpoint(ckpt) is not None:
        cfg.learner.hook = deep_merge_dicts(cfg.learner.hook, {"load_ckpt_before_run": str(ckpt)})
        return
    if (Path(exp_dir) / RESULT_FILE).exists():
        raise CheckpointError(f"cannot resume {exp_dir}: no checkpoint in {exp_dir}/ckpt")
    get_logger().info(f"{exp_dir} has no checkpoint yet (it never finished); starting afresh")


def resumable(run_dir: Path) -> Path | None:
    """The run dir when it holds a checkpoint to resume from (else None)."""
    from ding_lite.worker.learner.checkpoint import latest_checkpoint  # torch: not at import

    ckpt = run_dir / "ckpt"
    return run_dir if ckpt.is_dir() and latest_checkpoint(ckpt) else None


def tidy_data(path_data: Path) -> None:
    """Removes temp files (a collector killed mid-write) and empty collector folders.

    Complete rollout files are never deleted here: the ledger accounts for each of them.
    """
    if not path_data.is_dir():
        return
    for folder in [path_data, *(p for p in path_data.iterdir() if p.is_dir())]:
        remove_stale_tmp(folder)
        if folder != path_data and not any(folder.iterdir()):
            folder.rmdir()


@contextlib.contextmanager
def prepare_run_dir(
    cfg: EasyDict, resuming: bool, folders: Iterable[str | Path] = ()
) -> Iterator[dict[str, Any]]:
    """Holds the run dir chosen earlier (``cfg.exp_dir``) for a run: locks it again, clears
    what a killed run left half-written there and in ``folders``, writes config.json.

    Yields ``outcome``: ``outcome["run_dir"]`` is the :class:`RunDir`. A new run that fails
    (an exception, or ``outcome["failed"]`` left true by the caller, e.g. when interrupted)
    before its first checkpoint removes what it put in the dir, so the same command can
    simply be run again.

    Raises:
        ExpDirInUse: a live run holds the dir.
        ConfigError: a run started in the dir since it was chosen (and this is no resume).
    """
    run_dir = RunDir.lock(cfg, resuming)
    outcome: dict[str, Any] = {"failed": True, "run_dir": run_dir}
    try:
        run_dir.prepare(cfg, folders)
        yield outcome
    finally:
        if outcome["failed"]:
            run_dir.discard_if_untrained(trained=resumable(run_dir.path) is not None)
        run_dir.release()


class RunDir:
    """A run's hold on its experiment dir, from the claim to the result.

    Attributes:
        path: the experiment dir.
        resuming: the run continues one that used the dir before (a failure keeps it).
        wandb: the run's W&B mirror (``logger.wandb``) from :meth:`prepare` to the result.
    """

    def __init__(self, lock: ExpDirLock | None, resuming: bool) -> None:
        self.lock = lock
        self.path = lock.path
        self.resuming = resuming
        self.wandb: WandbMirror | None = None

    @classmethod
    def claim(cls, cfg: EasyDict, resuming: bool) -> RunDir:
        """Chooses and locks the run's dir (``cfg.exp_dir``, or ``./<exp_name>[_N]``), and
        sets ``cfg.exp_dir`` to it; a resumed run loads its newest checkpoint.

        Raises:
            ExpDirInUse: a live run holds the dir.
            ConfigError: the dir holds a run and this is no resume.
            CheckpointError: resuming a finished run that left no checkpoint.
        """
        check_wandb(cfg)  # a missing optional package refuses the run before it writes
        run = cls(claim_exp_dir(cfg, resuming=resuming), resuming)
        cfg.exp_dir = str(run.path)
        if resuming:
            try:
                resume_from_checkpoint(cfg, run.path)
            except BaseException:
                run.release()
                raise
        return run

    @classmethod
    def held_by_supervisor(cls, path: str | Path) -> RunDir:
        """The dir of a run whose supervisor (``ding-lite parallel``) holds the lock, the
        W&B mirror and the clean-up, as seen by the coordinator it runs as a child: it
        only writes the result."""
        run = cls.__new__(cls)
        run.lock, run.path, run.resuming, run.wandb = None, Path(path), True, None
        return run

    @classmethod
    def lock(cls, cfg: EasyDict, resuming: bool) -> RunDir:
        """Locks ``cfg.exp_dir`` (chosen earlier by :meth:`claim`) again, for the run.

        Raises:
            ExpDirInUse: a live run holds the dir.
            ConfigError: a run started in the dir since it was chosen (and this is no resume).
        """
        run = cls(lock_exp_dir(cfg.exp_dir), resuming)
        if not resuming and (run.path / "config.json").exists():
            run.release()
            raise ConfigError(f"{run.path} already holds a run (one started there just now)")
        return run

    def prepare(self, cfg: EasyDict, folders: Iterable[str | Path] = ()) -> None:
        """Removes the temp files a killed run left in the dir, ``ckpt/``, ``videos/`` and
        ``folders``, then writes config.json: the first thing the run writes, once every
        input is accepted. With ``logger.wandb`` it starts the run's W&B mirror."""
        # The dir itself (status.json's temp file), ckpt/, videos/ and the shared folders.
        for folder in (self.path, self.path / "ckpt", self.path / "videos", *map(Path, folders)):
            remove_stale_tmp(folder)
        save_config(cfg, self.path)
        self.wandb = WandbMirror.start(cfg, self.path)

    def discard_if_untrained(self, trained: bool) -> bool:
        """For a run that failed: removes what it put in the dir unless it trained or
        resumes; returns whether it did."""
        if trained or self.resuming:
            return False
        self._end_wandb(None)
        self.lock.discard()
        return True

    def resumable(self) -> Path | None:
        """The dir when it holds a checkpoint to resume from."""
        return resumable(self.path)

    def write_result(self, result: dict[str, Any]) -> None:
        """Writes ``result.json``: the one place any ding_lite code writes it (and the W&B
        run's summary)."""
        atomic_write_json(result, self.path / RESULT_FILE)
        self._end_wandb(result)

    def _end_wandb(self, result: dict[str, Any] | None) -> None:
        """Ends the W&B run: with ``result`` as its summary, or failed (None)."""
        mirror, self.wandb = self.wandb, None
        if mirror is not None:
            reason = (result or {}).get("stop_reason")
            code = 1 if result is None else exit_code(reason) if reason in STOP_REASONS else 0
            mirror.finish(result, exit_code=code)

    def result_written(self, result: dict[str, Any]) -> None:
        """Ends the W&B run with a result another process of the run wrote (the
        supervised coordinator)."""
        self._end_wandb(result)

    def release(self) -> None:
        """Lets go of the dir (safe to repeat); a W&B run still open ends as failed."""
        self._end_wandb(None)
        if self.lock is not None:
            self.lock.release()

    def __enter__(self) -> RunDir:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


@dataclass
class RunFigures:
    """What both pipelines report of a run (``result.json``'s shared keys).

    Attributes:
        solved: an evaluation reached ``evaluator.stop_value``.
        stop_reason: why the run ended (``ding_lite.utils.stop.STOP_REASONS`` or a hook's).
        eval_return_mean: mean return of the last evaluation (None: none ran).
        eval_episodes: episodes that evaluation covered (0: none ran).
        train_return_mean: mean return of the recent training episodes (None: none ended).
        envstep: env steps collected in total.
        train_iter: iterations done in total.
        wall_s: seconds of the whole call.
        sps: env steps per second of this run's own steps (a resumed run's earlier steps
            left out).
        has_best_checkpoint: ``ckpt/best.pt`` exists.
        best_eval_return: the best evaluation's mean return.
        skipped_steps: optimizer steps skipped for non-finite losses or gradients.
        restarts: workers restarted after a failure (0 in a serial run).
        policy_lag_mean: the mean over this run's iterations of the policy lag of the
            rollouts each trained on (versions between collection and update; 0 serial).
        policy_lag_max: the largest lag of any rollout trained on (0 in a serial run).
        dropped_env_steps: env steps collected but dropped (stale, invalid or rolled back;
            not those left over at the run's end).
        gradient_steps: minibatches trained on in this run.
    """

    solved: bool
    stop_reason: str | None
    eval_return_mean: float | None
    eval_episodes: int
    train_return_mean: float | None
    envstep: int
    train_iter: int
    wall_s: float
    sps: float
    has_best_checkpoint: bool
    best_eval_return: float | None
    skipped_steps: int
    restarts: int
    policy_lag_mean: float = 0.0
    policy_lag_max: int = 0
    dropped_env_steps: int = 0
    gradient_steps: int = 0


def build_result(cfg: EasyDict, figures: RunFigures, **extra: Any) -> dict[str, Any]:
    """The content of ``result.json``: the config's identity, ``figures`` and the
    pipeline's own ``extra`` keys, every float rounded by :func:`round_figure`."""
    shared = asdict(figures)
    best = f"ckpt/{BEST_CKPT}" if shared.pop("has_best_checkpoint") else None
    result = {
        "exp_name": cfg.exp_name,
        "exp_dir": str(cfg.exp_dir),
        "env": cfg.env.name,
        "seed": cfg.seed,
        "stop_value": cfg.evaluator.stop_value,
        **shared,
        "best_checkpoint": best,
        **extra,
    }
    return _rounded(result)


def round_figure(value: float) -> float:
    """3 decimals, or 4 significant digits below 1 (0.0001234): enough to compare runs,
    without 16 digits of noise."""
    if not math.isfinite(value) or value == 0:
        return value
    return round(value, max(3, 3 - math.floor(math.log10(abs(value)))))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round_figure(value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def summary(result: dict[str, Any]) -> str:
    """The closing lines of both pipelines: the outcome, why a failed run stopped, the
    ledger of every rollout (parallel runs), and the run dir."""
    state = "solved" if result["solved"] else f"not solved ({result['stop_reason']})"
    ev, win = result["eval_return_mean"], result.get("eval_win_rate")
    eval_text = "-" if ev is None else f"{ev:.2f} over {result['eval_episodes']} episodes"
    win_text = "" if win is None else f" (win rate {win:.1%})"
    restarts = f", {result['restarts']} restart(s)" if result.get("restarts") else ""
    lines = [
        f"{state}: eval return {eval_text}{win_text}, {result['envstep']} env steps, "
        f"{result['train_iter']} iterations, {result['wall_s']:.1f} s "
        f"({result['sps']:,.0f} SPS){restarts}"
    ]
    if result.get("stop_detail"):
        lines.append(f"stopped: {result['stop_detail']}")
    if result.get("ledger"):
        lines.append("rollouts: " + ", ".join(f"{k} {v}" for k, v in result["ledger"].items()))
    lines.append(f"run dir: {result['exp_dir']}")
    return "\n".join(lines)
