"""Pipelines and the command line: the only place where every layer meets.

- the pipelines: :mod:`.serial`, :mod:`.parallel` and the per-role runners :mod:`.roles`,
  sharing the run's options (:mod:`.options`) and its life in the run dir (:mod:`.lifecycle`,
  :mod:`.run_dir`: claim, prepare, resume, tidy, result.json, summary);
- :mod:`.launch`: how a parallel run's workers are started (processes, Ray actors);
- :mod:`.trained`: tools for a trained policy (predict, eval, render, the "ppo" agent);
- :mod:`.cli`: the ``ding-lite`` command.

The public names load on first use (PEP 562), so the command line can import this package
without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "RunOptions": "ding_lite.entry.options",
    "TrainedPolicy": "ding_lite.entry.trained.predict",
    "TrainedRun": "ding_lite.entry.trained.predict",
    "load_policy": "ding_lite.entry.trained.predict",
    "parallel_pipeline": "ding_lite.entry.parallel",
    "serial_pipeline": "ding_lite.entry.serial",
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
    from ding_lite.entry.options import RunOptions
    from ding_lite.entry.parallel import parallel_pipeline
    from ding_lite.entry.serial import serial_pipeline
    from ding_lite.entry.trained.predict import TrainedPolicy, TrainedRun, load_policy


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ding_lite.entry' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
