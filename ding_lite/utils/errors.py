"""Exceptions that carry a message meant for the user.

The CLI prints ``DingLiteError`` messages as one line and exits non-zero; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os

# errno values of a write that failed for lack of space: the disk, or the user's quota.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class DingLiteError(Exception):
    """Base class of every error whose message tells the user what to change."""


class ConfigError(DingLiteError, ValueError):
    """A config key, value, experiment name or config file is wrong."""


class TryLater(DingLiteError):
    """A request that cannot be served now and may be sent again (a receiver that is full
    or not ready yet): HTTP 429 where it is answered over HTTP."""


class CheckpointError(DingLiteError):
    """A checkpoint is missing, unreadable or does not match the model."""


class DiskFullError(DingLiteError, OSError):
    """A write failed because the disk (or the user's quota) is full.

    Built as ``DiskFullError(errno.ENOSPC, message)``; it prints as the message alone.
    """

    @classmethod
    def writing(cls, path: str | os.PathLike) -> DiskFullError:
        """The error of a write to ``path`` that found the disk full."""
        return cls(
            errno.ENOSPC,
            f"disk full while writing {path}; free some space, then resume the run with "
            "--resume EXP_DIR",
        )

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err``, or an error it was raised from, is a write failing for lack of space
    (ENOSPC or EDQUOT; DiskFullError is one)."""
    current: BaseException | None = err
    for _ in range(16):  # a cause chain is short; never loop on a cycle
        if current is None:
            return False
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False
