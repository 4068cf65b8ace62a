"""The run dir's lock: one run per folder, and choosing a run's folder.

A run holds an exclusive ``flock`` on ``<run dir>/.lock`` (which holds its pid) from before
it writes anything until it ends; the OS releases it when the process dies, however it
dies. Both pipelines take it, so a serial and a parallel run exclude each other too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from pathlib import Path

from easydict import EasyDict

from ding_lite.utils.errors import ConfigError

LOCK_NAME = ".lock"


class RunDirInUse(ConfigError):
    """Another live run holds the run dir."""

    def __init__(self, path: Path, pid: str) -> None:
        super().__init__(
            f"{path} is in use by run pid {pid}; wait for it to end or pick another --exp-dir"
        )
        self.path = path
        self.pid = pid


class RunDirLock(contextlib.AbstractContextManager):
    """This process's exclusive hold on a run dir (from :func:`lock_run_dir`); ``with``
    releases it.

    Attributes:
        path: the run dir.
        created: whether taking the lock created the dir.
    """

    def __init__(self, path: Path, fd: int, created: bool, existing: frozenset[str]) -> None:
        self.path = path
        self.created = created
        self._fd: int | None = fd
        self._existing = existing  # what the dir held before this run, when not created

    @property
    def held(self) -> bool:
        return self._fd is not None

    @property
    def fd(self) -> int | None:
        """The locked file's descriptor (None once released): a child process that
        inherits it holds the lock with this process, and on after it dies."""
        return self._fd

    def release(self) -> None:
        """Unlocks (safe to repeat); the emptied ``.lock`` file stays for the next run."""
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
        except OSError:  # a full disk cannot refuse a truncation, but do not fail on it
            pass
        self._unlock()

    def discard(self) -> None:
        """Removes what this run put in the dir (all of it if the run created the dir), then
        unlocks: for a run that failed before it trained, so the same command can simply be
        run again. Removes nothing once the lock is released."""
        if self._fd is None:
            return
        if self.created:
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            for name in set(os.listdir(self.path)) - self._existing - {LOCK_NAME}:
                entry = self.path / name
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            if LOCK_NAME not in self._existing:
                (self.path / LOCK_NAME).unlink(missing_ok=True)
        # Unlinked while still held: a run waiting on the old file sees it is gone and retries.
        self._unlock()

    def _unlock(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:  # already released
            return
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def lock_run_dir(path: str | Path) -> RunDirLock:
    """Takes the exclusive lock of a run dir, creating the dir if missing.

    Returns at once: never waits for another run.

    Raises:
        RunDirInUse: a live process holds it (a ConfigError naming that process's pid).
        ConfigError: ``path`` cannot be used as a folder.
    """
    path = Path(path)
    lock_file = path / LOCK_NAME
    for _ in range(100):  # only a run removing the dir at this very moment makes us retry
        created = False
        try:
            path.mkdir(parents=True)
            created = True
        except FileExistsError:
            pass
        except OSError as err:
            raise ConfigError(f"cannot create the run dir {path}: {err.strerror}") from None
        try:
            existing = frozenset() if created else frozenset(os.listdir(path))
            fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except (FileNotFoundError, NotADirectoryError) as err:
            if not path.exists():
                continue  # removed between mkdir and open
            raise ConfigError(f"{path} is not a folder: {err.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise RunDirInUse(path, holder) from None
        if _still_linked(fd, lock_file):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return RunDirLock(path, fd, created, existing)
        os.close(fd)  # the holder removed the dir (a failed start-up) while we waited
    raise ConfigError(f"cannot lock {path}: it keeps being removed; is another run using it?")


def _read_pid(fd: int) -> str:
    # The holder writes its pid right after locking: give it a moment.
    for _ in range(20):
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        if text:
            return text
        time.sleep(0.01)
    return "unknown"


def _still_linked(fd: int, lock_file: Path) -> bool:
    try:
        on_disk = os.stat(lock_file)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def claim_run_dir(cfg: EasyDict, resuming: bool = False) -> RunDirLock:
    """Chooses the run's folder and locks it, in one step.

    With ``exp_dir`` unset: ``./<exp_name>``, else ``./<exp_name>_N`` for the first N whose
    folder holds no run and is not locked, so runs started at the same time never share
    one. An explicit ``exp_dir`` that holds a run is refused unless resuming.

    Raises:
        RunDirInUse: the explicit ``exp_dir`` is held by a live run.
        ConfigError: the explicit ``exp_dir`` already holds a run and this is no resume.
    """
    if cfg.exp_dir:
        lock = lock_run_dir(cfg.exp_dir)
        if (lock.path / "config.json").exists() and not resuming:
            lock.release()
            raise ConfigError(
                f"{lock.path} already holds a run; resume it with --resume {lock.path} or "
                "pick another --exp-dir"
            )
        return lock
    n = 0
    while True:
        path = Path(cfg.exp_name if n == 0 else f"{cfg.exp_name}_{n}")
        n += 1
        if (path / "config.json").exists():
            continue
        try:
            lock = lock_run_dir(path)
        except RunDirInUse:
            continue  # a run starting right now took it
        if not (path / "config.json").exists():
            return lock
        lock.release()  # a run finished there between the check and the lock


def ensure_free(path: str | Path) -> None:
    """Raises :class:`RunDirInUse` when a live run holds the run dir ``path``; creates
    nothing."""
    if (Path(path) / LOCK_NAME).exists():
        lock_run_dir(path).release()
