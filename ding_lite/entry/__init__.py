"""Pipelines and the command line: the only place where every layer meets.

``serial_pipeline`` and ``parallel_pipeline`` load on first use (PEP 562), so the command
line can import this package without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "serial_pipeline": "ding_lite.entry.serial",
    "parallel_pipeline": "ding_lite.entry.parallel",
}

__all__ = [
    "parallel_pipeline",
    "serial_pipeline",
]

if TYPE_CHECKING:
    from ding_lite.entry.parallel import parallel_pipeline
    from ding_lite.entry.serial import serial_pipeline


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ding_lite.entry' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
