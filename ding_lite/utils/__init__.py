"""Helpers used by every layer: errors, registry, atomic file I/O, logging, timing, RNG.

Helpers only: a feature lives in the room it serves (the video writer in
``worker/collector``, the W&B mirror in ``entry/reporting``). Two vocabularies stay here
because the coordinator, the workers and the entry points all speak them, and the
coordinator and the workers may not import each other: the stop reasons and exit codes
(:mod:`.stop`) and the names of rollout and checkpoint files (:mod:`.paths`).

The names load on first use (PEP 562): importing ``ding_lite.utils.errors`` (as the command
line does) must not import torch through the file helpers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ding_lite.utils.lazy import lazy_exports

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

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
