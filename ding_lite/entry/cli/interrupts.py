"""What the command line imports for each command, with SIGINT and SIGTERM held back.

No torch here: the command line imports this first. The SIGTERM policy itself (SIGTERM
unwinds like Ctrl-C) is :func:`ding_lite.utils.stop.sigterm_interrupts`.
"""

from __future__ import annotations

import importlib
import signal
import threading

from ding_lite.utils.stop import RunInterrupted, signals_held

# The module each command imports first: torch, numpy and the rest come with it.
_COMMAND_MODULES = {
    "serial": "ding_lite.entry.pipelines.serial",
    # The coordinator only speaks HTTP and reads files: torch-free, so a restart does not
    # pay torch's ~2 s of start-up CPU (a test checks).
    "parallel": "ding_lite.entry.pipelines.parallel",
    "coordinator": "ding_lite.entry.pipelines.coordinator_process",
    "learner": "ding_lite.entry.pipelines.worker_process",
    "collector": "ding_lite.entry.pipelines.worker_process",
    "eval": "ding_lite.entry.trained.evaluate",
    "render": "ding_lite.entry.trained.render",
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
    with signals_held() as seen:
        importlib.import_module(module)
    if seen:
        raise RunInterrupted(signal.Signals(seen[0]).name)
