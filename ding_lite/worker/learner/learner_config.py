"""The ``learner`` config section a BaseLearner is built from: defaults merged, keys checked.

A key the learner does not know is a one-line ConfigError, never silently ignored. DI-engine's
learner config is taken as a DI user writes it: ``use_cuda`` picks the learner's device,
``train_iterations`` is ``max_iterations``, and ``dataloader`` (with DI's bookkeeping keys) is
accepted and ignored with one warning that says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from easydict import EasyDict

from ding_lite.config.config import deep_merge_dicts
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.utils.registry import suggest

# DI-engine learner keys that have no effect here -> why.
_IGNORED_DI_KEYS = {
    "dataloader": "ding_lite's batches come from the collector (serial) or the comm learner's "
    "get_data through AsyncDataLoader (parallel), so DI's dataloader settings do not apply",
    "log_policy": "the log_show hook logs every learn-info scalar",
    "cfg_type": "DI-engine's config bookkeeping",
}


def learner_config(cfg: Mapping[str, Any] | None) -> EasyDict:
    """The learner section with its defaults.

    DI-engine's keys: ``use_cuda`` (bool) is kept for :func:`learner_device`;
    ``train_iterations`` sets ``max_iterations``; ``dataloader``, ``log_policy`` and
    ``cfg_type`` are dropped with one warning naming them and why.

    Raises:
        ConfigError: a key the learner section does not have (one line, with a hint), a
            ``use_cuda`` that is not a bool, or ``train_iterations`` and ``max_iterations``
            that disagree.
    """
    cfg = dict(cfg or {})
    known = DEFAULT_CONFIG["learner"]
    ignored = sorted(k for k in cfg if k in _IGNORED_DI_KEYS)
    for key in ignored:
        del cfg[key]
    if ignored:
        reasons = "; ".join(f"{k}: {_IGNORED_DI_KEYS[k]}" for k in ignored)
        get_logger("learner").warning(f"ignoring DI-engine learner key(s) {reasons}")
    if "train_iterations" in cfg:  # DI-engine's newer name of max_iterations
        iterations = cfg.pop("train_iterations")
        if cfg.setdefault("max_iterations", iterations) != iterations:
            raise ConfigError(
                f"learner.train_iterations ({iterations}) and learner.max_iterations "
                f"({cfg['max_iterations']}) disagree; set one of them"
            )
    use_cuda = cfg.pop("use_cuda", None)
    if use_cuda is not None and not isinstance(use_cuda, bool):
        raise ConfigError(f"learner.use_cuda must be true or false, got {use_cuda!r}")
    for key in cfg:
        if key not in known:
            raise ConfigError(
                f"unknown learner config key '{key}'{suggest(key, list(known))}; "
                f"known: {', '.join(known)}, and DI-engine's use_cuda, train_iterations, "
                f"{', '.join(_IGNORED_DI_KEYS)}"
            )
    merged = EasyDict(deep_merge_dicts(known, cfg))
    if use_cuda is not None:
        merged.use_cuda = use_cuda
    return merged


def learner_device(cfg: Mapping[str, Any], rank: int = 0) -> torch.device | None:
    """The device ``learner.use_cuda`` (DI-engine's key) asks for: ``cuda:<rank mod GPUs>``
    for true (DI-engine's choice for a rank), cpu for false, None when the key is not set
    (the policy's own device is the learner's).

    Raises:
        ConfigError: ``use_cuda`` is true and this machine has no CUDA device.
    """
    use_cuda = cfg.get("use_cuda")
    if use_cuda is None:
        return None
    if not use_cuda:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(
            "learner.use_cuda is true but CUDA is not available on this machine; set it to "
            "false (or drop it) to train on the cpu"
        )
    return torch.device("cuda", rank % torch.cuda.device_count())


def check_policy_device(device: torch.device | None, policy: Any) -> None:
    """Refuses a policy that lives elsewhere than the device ``learner.use_cuda`` picked (the
    learner moves each batch there, where the policy must be).

    Raises:
        ConfigError: the policy's ``device`` is another one.
    """
    own = getattr(policy, "device", None)
    if device is None or own is None:
        return
    own = torch.device(own)
    if own.type != device.type or None not in (own.index, device.index) and own != device:
        raise ConfigError(
            f"learner.use_cuda puts the learner on {device} but the policy lives on {own}; "
            f"build the policy with device='{device}' or change learner.use_cuda"
        )


def to_device(data: Any, device: torch.device) -> Any:
    """``data`` (tensors, possibly in dicts, lists and tuples) with every tensor on ``device``."""
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, Mapping):
        # dict, EasyDict...: a Mapping subclass that takes a dict (Mapping's own type does not).
        return type(data)({k: to_device(v, device) for k, v in data.items()})  # type: ignore[call-arg]
    if isinstance(data, (list, tuple)):
        moved = [to_device(v, device) for v in data]
        return type(data)(*moved) if hasattr(data, "_fields") else type(data)(moved)
    return data
