"""Helpers used by every layer: errors, registry, atomic file I/O, logging, timing, RNG."""

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
