"""Helpers used by every layer: errors, registry, atomic file I/O, logging, timing, RNG.

The names load on first use (PEP 562): importing ``ding_lite.utils.errors`` (as the command
line does) must not import torch through the file helpers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CheckpointError": "ding_lite.utils.errors",
    "ConfigError": "ding_lite.utils.errors",
    "DingLiteError": "ding_lite.utils.errors",
    "PhaseTimer": "ding_lite.utils.timer",
    "Registry": "ding_lite.utils.registry",
    "atomic_torch_save": "ding_lite.utils.file_io",
    "atomic_write_json": "ding_lite.utils.file_io",
    "atomic_write_text": "ding_lite.utils.file_io",
    "build_tb_logger": "ding_lite.utils.log",
    "get_logger": "ding_lite.utils.log",
    "get_rng_state": "ding_lite.utils.rng",
    "safe_torch_load": "ding_lite.utils.file_io",
    "set_rng_state": "ding_lite.utils.rng",
    "set_seed": "ding_lite.utils.rng",
    "suggest": "ding_lite.utils.registry",
}

__all__ = [
    "CheckpointError",
    "ConfigError",
    "DingLiteError",
    "PhaseTimer",
    "Registry",
    "atomic_torch_save",
    "atomic_write_json",
    "atomic_write_text",
    "build_tb_logger",
    "get_logger",
    "get_rng_state",
    "safe_torch_load",
    "set_rng_state",
    "set_seed",
    "suggest",
]

if TYPE_CHECKING:
    from ding_lite.utils.errors import CheckpointError, ConfigError, DingLiteError
    from ding_lite.utils.file_io import (
        atomic_torch_save,
        atomic_write_json,
        atomic_write_text,
        safe_torch_load,
    )
    from ding_lite.utils.log import build_tb_logger, get_logger
    from ding_lite.utils.registry import Registry, suggest
    from ding_lite.utils.rng import get_rng_state, set_rng_state, set_seed
    from ding_lite.utils.timer import PhaseTimer


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ding_lite.utils' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
