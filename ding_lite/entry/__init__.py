"""Pipelines and the command line: the only place where every layer meets.

- :mod:`.cli`: the ``ding-lite`` command (its arguments, each subcommand, interrupts);
- :mod:`.run`: a run's options and its run dir, claimed once and held to the end (the lock,
  the saved config, resume, result.json and the closing summary), the same for both
  pipelines;
- :mod:`.pipelines`: the serial and parallel pipelines, and the processes a parallel run is
  made of (the coordinator process, the learner and collector worker processes);
- :mod:`.launch`: how a parallel run's workers are started and supervised (processes, Ray
  actors);
- :mod:`.reporting` and :mod:`.live`: what a run reports (progress, curves, status lines,
  the W&B mirror) and its live view (status.json, ``ding-lite status``, the dashboard);
- :mod:`.trained`: tools for a trained policy (predict, eval, render, the "ppo" agent).

The public names load on first use (PEP 562), so the command line can import this package
without importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ding_lite.utils.lazy import lazy_exports

_EXPORTS = {
    "RunOptions": "ding_lite.entry.run.options",
    "TrainedPolicy": "ding_lite.entry.trained.predict",
    "TrainedRun": "ding_lite.entry.trained.predict",
    "load_policy": "ding_lite.entry.trained.predict",
    "parallel_pipeline": "ding_lite.entry.pipelines.parallel",
    "serial_pipeline": "ding_lite.entry.pipelines.serial",
}

__all__ = [
    "RunOptions",
    "TrainedPolicy",
    "TrainedRun",
    "load_policy",
    "parallel_pipeline",
    "serial_pipeline",
]

if TYPE_CHECKING:
    from ding_lite.entry.pipelines.parallel import parallel_pipeline
    from ding_lite.entry.pipelines.serial import serial_pipeline
    from ding_lite.entry.run.options import RunOptions
    from ding_lite.entry.trained.predict import TrainedPolicy, TrainedRun, load_policy

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
