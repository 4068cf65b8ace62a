"""Why a run stopped, the exit code each reason gives, and the one SIGTERM policy.

``result.json`` carries ``stop_reason``; the command line exits with :func:`exit_code`.

SIGTERM is met in one way everywhere (command line, both pipelines, workers, a learner's
checkpoint-on-exit): :func:`sigterm_interrupts` makes it raise :class:`RunInterrupted`, so
the code unwinds like Ctrl-C (``finally`` blocks, result.json, a last checkpoint). Only this
module installs a SIGTERM handler; a test checks it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
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


def limit_reached(cfg: Any, envstep: int, train_iter: int) -> str | None:
    """``"max_env_step"`` or ``"max_train_iter"`` when the run's limit is reached, else None."""
    if cfg.max_env_step is not None and envstep >= cfg.max_env_step:
        return MAX_ENV_STEP
    if cfg.max_train_iter is not None and train_iter >= cfg.max_train_iter:
        return MAX_TRAIN_ITER
    return None


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


class RunInterrupted(SystemExit, KeyboardInterrupt):
    """A run ended by SIGINT or SIGTERM: the one exception either signal ends a run with.

    A KeyboardInterrupt, so code that handles Ctrl-C handles SIGTERM the same way; and a
    SystemExit whose code is the signal's exit code (130 or 143), so a script that does not
    catch it exits as the shell expects, without a traceback. The command line exits with
    :func:`exit_code` of ``"interrupted"`` and :attr:`signal_name`.

    Attributes:
        signal_name: ``"SIGINT"`` or ``"SIGTERM"``.
        resume_dir: the run dir, when it holds a checkpoint to resume from (else None).
    """

    def __init__(self, signal_name: str = "SIGINT", resume_dir: Any = None) -> None:
        super().__init__(exit_code(INTERRUPTED, signal_name))
        self.signal_name = signal_name
        self.resume_dir = resume_dir

    def __str__(self) -> str:
        return self.signal_name


class _SigtermState:
    """The handler installed by the outermost :func:`sigterm_interrupts` block."""

    depth = 0
    received = False
    previous: Any = None


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`RunInterrupted` ``("SIGTERM")``.

    Main thread only (Python delivers signals there; elsewhere a no-op). Blocks nest: the
    outermost one installs the handler and restores the previous one when it ends. Only the
    first SIGTERM raises; later ones, while the code unwinds from it (writing result.json,
    a checkpoint, stopping workers), are ignored, so a second signal cannot cut that short.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = _SigtermState
    if state.depth == 0:
        state.received = False
        state.previous = signal.signal(signal.SIGTERM, _on_sigterm)
    state.depth += 1
    try:
        yield
    finally:
        state.depth -= 1
        if state.depth == 0:
            signal.signal(signal.SIGTERM, state.previous)
            state.previous = None


def sigterm_received() -> bool:
    """Whether SIGTERM arrived inside the current :func:`sigterm_interrupts` block."""
    return _SigtermState.received


def interrupted_by() -> str:
    """``"SIGTERM"`` when SIGTERM arrived inside the current block, else ``"SIGINT"``."""
    return "SIGTERM" if _SigtermState.received else "SIGINT"


def _on_sigterm(signum: int, frame: Any) -> None:
    if _SigtermState.received:
        return  # already stopping
    _SigtermState.received = True
    raise RunInterrupted("SIGTERM")


@contextlib.contextmanager
def exit_quietly_while_loading() -> Iterator[None]:
    """While the block runs (the command line's own modules loading), SIGINT or SIGTERM ends
    the process at once with its one line (``ding-lite: interrupted (SIGINT)``, exit 130 or
    143). After it Ctrl-C raises KeyboardInterrupt again, for the command to unwind; SIGTERM
    keeps the one-line exit until a :func:`sigterm_interrupts` block takes it over."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _exit_now(signum: int, frame: Any) -> None:
    sys.stderr.write(f"ding-lite: interrupted ({signal.Signals(signum).name})\n")
    sys.exit(128 + signum)


@contextlib.contextmanager
def signals_held() -> Iterator[list[int]]:
    """Holds SIGINT and SIGTERM back for the block; yields the list of those that came.

    For steps a signal must not split (an import whose initialisation swallows it, a child
    process started but not yet recorded). The previous handlers are back when the block
    ends; the caller then acts on the first signal held (main thread only; elsewhere Python
    delivers no signal and the list stays empty).
    """
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return
    previous = {
        signum: signal.signal(signum, lambda n, frame: arrived.append(n))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield arrived
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Delivers the first SIGINT or SIGTERM of the block when the block ends; a second one
    during the block is delivered at once.

    For a unit of work a checkpoint must hold whole or not at all (a serial run's
    iteration): Ctrl-C stops the run at the next boundary, and Ctrl-C again stops it at
    once. The handlers in force before the block deliver them (main thread only).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous: dict[int, Any] = {}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def hold(signum: int, frame: Any) -> None:
        if not arrived:
            arrived.append(signum)
            return
        restore()  # the second: as if nothing held it
        signal.raise_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        restore()
    if arrived:
        signal.raise_signal(arrived[0])


def import_held(module: str, *optional: str) -> None:
    """Imports ``module`` (and each of ``optional`` that exists) with SIGINT and SIGTERM
    held back, then raises :class:`RunInterrupted` for the first that came.

    A signal that lands inside an extension's initialisation can be swallowed there
    (torch's start-up catches the error of its NumPy import; ``torch._dynamo``'s import,
    which ``torch.optim``'s optimizers bring, catches it too) and the run would go on as if
    nothing happened. Held back, the signal ends the command right after the imports.
    """
    with signals_held() as seen:
        importlib.import_module(module)
        for name in optional:
            try:
                importlib.import_module(name)
            except ImportError:  # a torch without it builds optimizers without it
                pass
    if seen:
        raise RunInterrupted(signal.Signals(seen[0]).name)


def exit_now_if_threads_linger(code: int) -> int:
    """Returns ``code``, or ends the process with it at once if a thread other than the
    main one is still running.

    A worker's task or collection thread can still be inside torch when the process
    leaves (a stop that outlived its bounded joins, on a loaded host). Python's shutdown
    then ends that thread in the middle of torch's C++ code, and the C++ runtime aborts the
    whole process: exit -6 and "terminate called without an active exception", not the
    code the worker chose. With such a thread alive, the logs and the standard streams are
    flushed and the process ends without the interpreter's shutdown (``os._exit``).
    """
    main = threading.main_thread()
    if not any(t is not main and t.is_alive() for t in threading.enumerate()):
        return code
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
