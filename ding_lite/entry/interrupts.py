"""How the command line meets SIGINT and SIGTERM before a run installs its own handlers.

Until a run takes over (and after it hands back), SIGTERM unwinds like Ctrl-C: the command
prints one line and exits with 143 (130 for SIGINT), whether the signal lands in imports,
config compilation or env building. No torch here: the command line imports this first.
"""

from __future__ import annotations

import importlib
import signal
import threading

from ding_lite.utils.stop import RunInterrupted


def sigterm_interrupts() -> None:
    """SIGTERM raises :class:`RunInterrupted` (in the main thread only; elsewhere a no-op)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_interrupts)


def _sigterm_interrupts(signum: int, frame: object) -> None:
    raise RunInterrupted("SIGTERM")


# The module each command imports first: torch, numpy and the rest come with it.
_COMMAND_MODULES = {
    "serial": "ding_lite.entry.serial",
    "parallel": "ding_lite.entry.parallel",
    "coordinator": "ding_lite.entry.parallel",
    "learner": "ding_lite.entry.parallel",
    "collector": "ding_lite.entry.parallel",
    "eval": "ding_lite.entry.evaluate",
    "render": "ding_lite.entry.render",
}


def import_for(command: str) -> None:
    """Imports what ``command`` needs with SIGINT/SIGTERM held back until it is done.

    A signal that lands inside an extension's initialisation can be swallowed there (torch's
    start-up catches the error of its NumPy import and goes on without it), and the run
    would go on as if nothing happened. Held back, the signal ends the command right after
    the imports: one line, exit 130 or 143.
    """
    module = _COMMAND_MODULES.get(command)
    if module is None or threading.current_thread() is not threading.main_thread():
        return
    seen: list[int] = []
    previous = {sig: signal.signal(sig, lambda n, f: seen.append(n)) for sig in _SIGNALS}
    try:
        importlib.import_module(module)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if seen:
        raise RunInterrupted(signal.Signals(seen[0]).name)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)
