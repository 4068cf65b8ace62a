"""Checkpoint files of a learner: finding, reading (with fallback) and rotating them.

A checkpoint is written atomically, so a process killed mid-save leaves the previous one
intact plus a hidden ``.ckpt_iter*.tmp`` file, which the next run removes. A newest
checkpoint that still cannot be read (truncated or damaged outside ding_lite) is skipped
with a warning naming it, and the one before it is loaded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ding_lite.utils import file_io
from ding_lite.utils.distributed import GroupLost
from ding_lite.utils.errors import CheckpointError, DiskFullError
from ding_lite.utils.file_io import safe_torch_load
from ding_lite.utils.log import get_logger
from ding_lite.utils.paths import BEST_CKPT, CKPT_GLOB, ckpt_name, parse_ckpt_name
from ding_lite.utils.stop import sigterm_interrupts

__all__ = [
    "BEST_CKPT",
    "CKPT_FORMAT",
    "BestEval",
    "checkpoint_iter",
    "checkpoint_on_exit",
    "ckpt_name",
    "checkpoints",
    "latest_checkpoint",
    "latest_valid_checkpoint",
    "read_checkpoint",
    "remove_stale_tmp",
    "rotate_checkpoints",
]

CKPT_FORMAT = "ding_lite.ckpt.v1"


def checkpoints(folder: str | Path) -> list[Path]:
    """The ``ckpt_iter*.pt`` files in ``folder``, newest (highest iteration) first."""
    folder = Path(folder)
    found = [(n, p) for p in folder.glob(CKPT_GLOB) if (n := parse_ckpt_name(p.name)) is not None]
    return [p for _, p in sorted(found, reverse=True)]


def latest_checkpoint(folder: str | Path) -> Path | None:
    """Returns the checkpoint of the highest iteration in ``folder``, or None."""
    found = checkpoints(folder)
    return found[0] if found else None


def checkpoint_iter(path: str | Path) -> int | None:
    """The iteration in a ``ckpt_iter<N>.pt`` file name (None for a named checkpoint)."""
    return parse_ckpt_name(Path(path).name)


def remove_stale_tmp(folder: str | Path) -> list[Path]:
    """Removes the temp files of saves killed mid-write in ``folder`` (see
    :func:`ding_lite.utils.file_io.remove_stale_tmp`), saying so in the log."""
    removed = file_io.remove_stale_tmp(folder)
    if removed:
        names = ", ".join(p.name for p in removed)
        get_logger("learner").info(f"removed unfinished temp file(s) of a killed save: {names}")
    return removed


def _read_one(path: Path) -> dict[str, Any]:
    state = safe_torch_load(path)
    if not isinstance(state, dict) or state.get("format") != CKPT_FORMAT:
        raise CheckpointError(f"{path} is not a ding_lite checkpoint")
    return state


def _newest_readable(folder: Path) -> tuple[Path, dict[str, Any]]:
    found = checkpoints(folder)
    if not found:
        raise CheckpointError(f"no checkpoint (ckpt_iter*.pt) in {folder}")
    errors = []
    for candidate in found:
        try:
            return candidate, _read_one(candidate)
        except CheckpointError as err:
            get_logger("learner").warning(f"skipping unreadable checkpoint: {err}")
            errors.append(str(err))
    raise CheckpointError(f"no readable checkpoint in {folder}; the newest: {errors[0]}")


def read_checkpoint(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """Reads a checkpoint file, or the newest readable ``ckpt_iter*.pt`` of a folder.

    For a folder, checkpoints are tried newest first; each unreadable one (empty, cut
    short, damaged) is skipped with a warning naming it.

    Returns:
        ``(the file read, its content)``.

    Raises:
        CheckpointError: missing, corrupt, or not a ding_lite checkpoint (for a folder: no
            readable checkpoint in it). One line, naming the file.
    """
    path = Path(path)
    if path.is_dir():
        return _newest_readable(path)
    return path, _read_one(path)


def latest_valid_checkpoint(folder: str | Path) -> Path | None:
    """The newest ``ckpt_iter*.pt`` of ``folder`` that reads as a ding_lite checkpoint.

    The file a resume from ``folder`` loads (``read_checkpoint(folder)``); unreadable newer
    ones are skipped with a warning naming them. Reads each file it checks.

    Returns:
        Its path, or None when ``folder`` holds no readable checkpoint (or does not exist).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    try:
        return _newest_readable(folder)[0]
    except CheckpointError:
        return None


def rotate_checkpoints(folder: str | Path, keep: int) -> None:
    """Deletes all but the newest ``keep`` iteration checkpoints."""
    for old in checkpoints(folder)[keep:]:
        old.unlink(missing_ok=True)


class BestEval:
    """The best evaluation mean so far, and when ``ckpt/best.pt`` has to be rewritten.

    A learner registers it as a state (``register_state("best_eval", ...)``), so every
    checkpoint, ``best.pt`` included, records the best so far. A ``best.pt`` written after the
    checkpoint a resume loads stays the bar: the constructor reads the figure it records.

    Args:
        ckpt_dir: the run's checkpoint folder.
    """

    def __init__(self, ckpt_dir: str | Path) -> None:
        self.path = Path(ckpt_dir) / BEST_CKPT
        self.return_mean: float | None = None
        self.train_iter: int | None = None
        if self.path.is_file():
            try:
                self.load_state_dict(_read_one(self.path)["extra"]["best_eval"])
            except (CheckpointError, KeyError, TypeError, ValueError) as err:
                get_logger("learner").warning(f"ignoring {self.path}: {err}")

    def beats(self, return_mean: float | None) -> bool:
        """Whether an evaluation mean beats the best so far (None and NaN never do)."""
        if return_mean is None or return_mean != return_mean:
            return False
        return self.return_mean is None or return_mean > self.return_mean

    def improves(self, return_mean: float | None, train_iter: int) -> bool:
        """Books an evaluation; True when it beats the best so far (then write best.pt)."""
        if return_mean is None or not self.beats(return_mean):
            return False
        self.return_mean, self.train_iter = float(return_mean), int(train_iter)
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"return_mean": self.return_mean, "train_iter": self.train_iter}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Takes the recorded best unless the one already known is better."""
        value = state["return_mean"]
        if value is not None and (self.return_mean is None or value > self.return_mean):
            self.return_mean = float(value)
            self.train_iter = None if state["train_iter"] is None else int(state["train_iter"])


def load_extra_states(objects: dict[str, Any], extra: dict[str, Any], path: Path) -> None:
    """Loads a checkpoint's ``extra`` states into the learner's registered ``objects`` (a
    collector, the best-evaluation record, ...), each one it holds.

    Raises:
        CheckpointError: one does not fit (another env, agent count or version); the
            message names it.
    """
    for name, obj in objects.items():
        if name not in extra:
            continue
        try:
            obj.load_state_dict(extra[name])
        except (RuntimeError, KeyError, ValueError, TypeError) as err:
            first = str(err).strip().splitlines()[0]
            raise CheckpointError(
                f"checkpoint {path} does not fit this run's {name}: {first}"
            ) from None


@contextlib.contextmanager
def checkpoint_on_exit(learner: Any) -> Iterator[None]:
    """Saves a checkpoint of ``learner`` when the block is left by an exception, SIGINT or
    SIGTERM (once it has trained), then re-raises.

    SIGTERM (in the main thread) raises :class:`~ding_lite.utils.stop.RunInterrupted` inside
    the block (:func:`~ding_lite.utils.stop.sigterm_interrupts`; uncaught, it exits with 143).
    A full disk (DiskFullError) and a checkpoint that did not fit (CheckpointError) are
    re-raised without trying to save.
    """
    with sigterm_interrupts():
        try:
            yield
        except (DiskFullError, GroupLost, CheckpointError):
            # A checkpoint would go to the same full disk; a lost group stopped mid-update,
            # and all its ranks restart from the last checkpoint they share; a checkpoint
            # that failed to load may have left the learner half loaded.
            raise
        except BaseException:
            if learner.policy is not None and learner.train_iter > 0:
                try:
                    path = learner.save_checkpoint()
                    learner.logger.warning(f"interrupted; saved checkpoint {path}")
                except Exception as err:  # keep the original error; say why saving failed
                    learner.logger.error(f"interrupted; could not save a checkpoint: {err}")
            raise
