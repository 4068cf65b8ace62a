"""One run per experiment dir: an exclusive lock the OS releases when the process dies."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.utils.log import get_logger

LOCK_NAME = ".lock"


class RunLock:
    """An exclusive ``flock`` on ``<exp_dir>/.lock``, which holds the owner's pid.

    Args:
        exp_dir: the run's folder (created if missing).

    Raises:
        ConfigError: another live process holds the lock (the message names its pid).
    """

    def __init__(self, exp_dir: str | Path) -> None:
        self.path = Path(exp_dir) / LOCK_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(
                f"{self.path.parent} is in use by run pid {holder}; wait for it to end or "
                "pick another --exp-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        """Unlocks (safe to call twice); the file stays, empty, for the next run."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def ensure_free(exp_dir: str | Path) -> None:
    """Raises the ConfigError of :class:`RunLock` when a live run holds ``exp_dir``."""
    if (Path(exp_dir) / LOCK_NAME).exists():
        RunLock(exp_dir).release()


def resume_afresh(exp_dir: str | Path) -> None:
    """Resuming a run that has no checkpoint: one that never finished (killed before its
    first checkpoint, no result.json) starts afresh in its dir; a finished one is an error.

    Raises:
        CheckpointError: the run finished without leaving a checkpoint.
    """
    if (Path(exp_dir) / "result.json").exists():
        raise CheckpointError(f"cannot resume {exp_dir}: no checkpoint in {exp_dir}/ckpt")
    get_logger().info(f"{exp_dir} has no checkpoint yet (it never finished); starting afresh")
