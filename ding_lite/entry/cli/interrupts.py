"""What the command line imports for each command, with SIGINT and SIGTERM held back.

No torch here: the command line imports this first. The SIGTERM policy itself (SIGTERM
unwinds like Ctrl-C) is :func:`ding_lite.utils.stop.sigterm_interrupts`.
"""

from __future__ import annotations

from ding_lite.utils.stop import import_held

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

    Raises:
        RunInterrupted: a signal came during the imports (one line, exit 130 or 143).
    """
    module = _COMMAND_MODULES.get(command)
    if module is not None:
        import_held(module)
