"""Exceptions that carry a message meant for the user.

The CLI prints ``DingLiteError`` messages as one line and exits non-zero; anything else is a
bug and keeps its traceback.
"""


class DingLiteError(Exception):
    """Base class of every error whose message tells the user what to change."""


class ConfigError(DingLiteError, ValueError):
    """A config key, value, experiment name or config file is wrong."""


class CheckpointError(DingLiteError):
    """A checkpoint is missing, unreadable or does not match the model."""


class DiskFullError(DingLiteError, OSError):
    """A write failed because the disk (or the user's quota) is full.

    Built as ``DiskFullError(errno.ENOSPC, message)``; it prints as the message alone.
    """

    def __str__(self) -> str:
        return self.strerror or super().__str__()
