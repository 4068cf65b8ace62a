"""Why a run stopped, and the exit code each reason gives: one vocabulary for both pipelines.

``result.json`` carries ``stop_reason``; the command line exits with :func:`exit_code`.
"""

from __future__ import annotations

from typing import Any

# The run did what it was asked: exit 0.
SOLVED = "solved"
MAX_ENV_STEP = "max_env_step"
MAX_TRAIN_ITER = "max_train_iter"
# Ended by a signal: 130 (SIGINT) or 143 (SIGTERM).
INTERRUPTED = "interrupted"
# Could not go on: exit 1.
STALLED = "stalled"  # no iteration completed within the watchdog's limit
NO_COLLECTORS = "no_collectors"  # every collector was lost or failed to start
LEARNER_FAILED = "learner_failed"  # the learner could not start, died or was lost for good
DIVERGED = "diverged"  # too many consecutive non-finite optimizer steps were skipped
DISK_FULL = "disk_full"  # a write failed with ENOSPC

STOP_REASONS = (
    SOLVED,
    MAX_ENV_STEP,
    MAX_TRAIN_ITER,
    INTERRUPTED,
    STALLED,
    NO_COLLECTORS,
    LEARNER_FAILED,
    DIVERGED,
    DISK_FULL,
)
SUCCESS_REASONS = frozenset({SOLVED, MAX_ENV_STEP, MAX_TRAIN_ITER})

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2  # a config or usage error, before the run started
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


def exit_code(stop_reason: str | None, signal_name: str | None = None) -> int:
    """The process exit code of a run that ended for ``stop_reason``.

    Args:
        stop_reason: one of :data:`STOP_REASONS` (None counts as a failure).
        signal_name: ``"SIGTERM"`` when an interrupted run was ended by SIGTERM (143);
            otherwise an interruption is taken as SIGINT (130).
    """
    if stop_reason in SUCCESS_REASONS:
        return EXIT_OK
    if stop_reason == INTERRUPTED:
        return EXIT_SIGTERM if signal_name == "SIGTERM" else EXIT_SIGINT
    return EXIT_FAILED


class RunInterrupted(KeyboardInterrupt):
    """A run ended by SIGINT or SIGTERM, raised after its result.json was written.

    A KeyboardInterrupt, so code that already handles Ctrl-C handles it; the command line
    exits with :func:`exit_code` of ``"interrupted"`` and :attr:`signal_name`.
    """

    def __init__(self, signal_name: str = "SIGINT", resume_dir: Any = None) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        #: The run dir, when it holds a checkpoint to resume from (else None).
        self.resume_dir = resume_dir
