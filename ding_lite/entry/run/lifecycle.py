"""The life of one run in its run dir, the same for the serial and parallel pipelines.

A run claims its dir once and holds it to the end (:meth:`RunDir.claim`: chosen and locked
in one step; a resumed run is pointed at its newest checkpoint there), prepares it
(:meth:`RunDir.prepare`: clears what a killed run left half-written, writes config.json),
trains, and writes ``result.json`` (only :meth:`RunDir.write_result` does, with the figures
of :mod:`.result`). A new run that fails before it trained removes what it created
(:meth:`RunDir.discard_if_untrained`), so the same command can simply be run again. A
parallel run also tidies its data folder (:func:`tidy_data`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from easydict import EasyDict

from ding_lite.config.config import deep_merge_dicts
from ding_lite.entry.reporting.wandb_mirror import WandbMirror, check_wandb
from ding_lite.entry.run.dir_lock import RunDirLock, claim_run_dir
from ding_lite.entry.run.saved_config import save_config
from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_write_json, remove_stale_tmp
from ding_lite.utils.log import get_logger
from ding_lite.utils.stop import STOP_REASONS, exit_code

RESULT_FILE = "result.json"


def resume_from_checkpoint(cfg: EasyDict, run_path: Path) -> None:
    """Points the learner of a resumed run at the newest checkpoint of its run dir.

    A run that has none yet (killed before its first checkpoint, no result.json) starts
    afresh in its dir; unreadable checkpoints are skipped when the learner loads.

    Raises:
        CheckpointError: the run finished without leaving a checkpoint.
    """
    from ding_lite.worker.learner.checkpoint import latest_checkpoint  # torch: not at import

    ckpt = (run_path / "ckpt").resolve()
    if latest_checkpoint(ckpt) is not None:
        cfg.learner.hook = deep_merge_dicts(cfg.learner.hook, {"load_ckpt_before_run": str(ckpt)})
        return
    if (run_path / RESULT_FILE).exists():
        raise CheckpointError(f"cannot resume {run_path}: no checkpoint in {run_path}/ckpt")
    get_logger().info(f"{run_path} has no checkpoint yet (it never finished); starting afresh")


def resumable(run_path: Path) -> Path | None:
    """``run_path`` when it holds a checkpoint to resume from (else None)."""
    from ding_lite.worker.learner.checkpoint import latest_checkpoint  # torch: not at import

    ckpt = run_path / "ckpt"
    return run_path if ckpt.is_dir() and latest_checkpoint(ckpt) else None


def shared_folders(cfg: EasyDict) -> tuple[str, str]:
    """The folders a parallel run shares with its workers (temp files there are cleared)."""
    return cfg.system.path_policy, cfg.system.path_data


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


class RunDir(contextlib.AbstractContextManager):
    """A run's hold on its run dir, from the claim to the result; ``with`` releases it.

    Attributes:
        path: the run dir (``cfg.exp_dir``).
        resuming: the run continues one that used the dir before (a failure keeps it).
        wandb: the run's W&B mirror (``logger.wandb``) from :meth:`prepare` to the result.
    """

    def __init__(self, lock: RunDirLock | None, path: Path, resuming: bool) -> None:
        self.lock = lock
        self.path = path
        self.resuming = resuming
        self.wandb: WandbMirror | None = None

    @classmethod
    def claim(cls, cfg: EasyDict, resuming: bool) -> RunDir:
        """Chooses and locks the run's dir (``cfg.exp_dir``, or ``./<exp_name>[_N]``), and
        sets ``cfg.exp_dir`` to it; a resumed run loads its newest checkpoint.

        Raises:
            RunDirInUse: a live run holds the dir.
            ConfigError: the dir holds a run and this is no resume.
            CheckpointError: resuming a finished run that left no checkpoint.
        """
        check_wandb(cfg)  # a missing optional package refuses the run before it writes
        lock = claim_run_dir(cfg, resuming=resuming)
        run = cls(lock, lock.path, resuming)
        cfg.exp_dir = str(run.path)
        if resuming:
            try:
                resume_from_checkpoint(cfg, run.path)
            except BaseException:
                run.release()
                raise
        return run

    @classmethod
    def claim_parallel(cls, cfg: EasyDict, resuming: bool) -> RunDir:
        """:meth:`claim` for a parallel run: the dir and the folders the run shares with its
        workers (``system.path_data``, ``system.path_policy``; by default ``data/`` and
        ``policy/`` inside it) become absolute in ``cfg``, as every worker reads them."""
        run = cls.claim(cfg, resuming)
        path = run.path.resolve()
        cfg.exp_dir = str(path)
        cfg.system.path_data = str(Path(cfg.system.path_data or path / "data").resolve())
        cfg.system.path_policy = str(Path(cfg.system.path_policy or path / "policy").resolve())
        return run

    @classmethod
    def held_by_supervisor(cls, path: str | Path) -> RunDir:
        """The dir of a run whose supervisor (``ding-lite parallel``) holds the lock, the
        W&B mirror and the clean-up, as seen by the coordinator it runs as a child: it
        only writes the result."""
        return cls(None, Path(path), resuming=True)

    def prepare(self, cfg: EasyDict, folders: Iterable[str | Path] = ()) -> None:
        """Removes the temp files a killed run left in the dir, ``ckpt/``, ``videos/`` and
        ``folders``, then writes config.json: the first thing the run writes, once every
        input is accepted. With ``logger.wandb`` it starts the run's W&B mirror."""
        # The dir itself (status.json's temp file), ckpt/, videos/ and the shared folders.
        for folder in (self.path, self.path / "ckpt", self.path / "videos", *map(Path, folders)):
            remove_stale_tmp(folder)
        save_config(cfg, self.path)
        self.wandb = WandbMirror.start(cfg, self.path)

    @contextlib.contextmanager
    def prepared(self, cfg: EasyDict, folders: Iterable[str | Path]) -> Iterator[dict[str, bool]]:
        """:meth:`prepare`, then the block that trains in the dir. Yields ``outcome``; when
        the block raises, or leaves ``outcome["failed"]`` true (e.g. when interrupted), a
        new run that left no checkpoint removes what it put in the dir."""
        outcome = {"failed": True}
        try:
            self.prepare(cfg, folders)
            yield outcome
        finally:
            if outcome["failed"]:
                self.discard_if_untrained(trained=self.resumable() is not None)

    def discard_if_untrained(self, trained: bool) -> bool:
        """For a run that failed: removes what it put in the dir unless it trained or
        resumes; returns whether it did."""
        if trained or self.resuming or self.lock is None:
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

    def __exit__(self, *exc_info: object) -> None:
        self.release()
