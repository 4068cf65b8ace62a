"""The ``learner`` config section a BaseLearner is built from: defaults merged, keys checked.

A key the learner does not know is a one-line ConfigError, never silently ignored; the keys
of DI-engine's learner config that ding_lite handles elsewhere say where.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding_lite.config.config import deep_merge_dicts
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.registry import suggest

# DI-engine learner keys -> where ding_lite takes that setting.
_DI_KEYS = {
    "use_cuda": "the run's device sets where the policy lives (config key device, --device)",
    "dataloader": "the comm learner's get_data hands every iteration its batch",
    "train_iterations": "use learner.max_iterations (BaseLearner.start) or max_train_iter",
}


def learner_config(cfg: Mapping[str, Any] | None) -> EasyDict:
    """The learner section with its defaults.

    Raises:
        ConfigError: a key the learner section does not have (one line, with a hint).
    """
    cfg = dict(cfg or {})
    known = DEFAULT_CONFIG["learner"]
    for key in cfg:
        if key in known:
            continue
        if key in _DI_KEYS:
            raise ConfigError(f"learner.{key} (DI-engine) is not a ding_lite key: {_DI_KEYS[key]}")
        raise ConfigError(
            f"unknown learner config key '{key}'{suggest(key, list(known))}; "
            f"known: {', '.join(known)}"
        )
    return EasyDict(deep_merge_dicts(known, cfg))
