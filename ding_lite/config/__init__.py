"""Config defaults, bundled experiments, merging and dotted overrides."""

from ding_lite.config.config import (
    EXPERIMENTS,
    compile_config,
    deep_merge_dicts,
    get_config,
    load_experiment,
    parse_overrides,
    parse_value,
    to_plain,
)
from ding_lite.config.defaults import DEFAULT_CONFIG

__all__ = [
    "DEFAULT_CONFIG",
    "EXPERIMENTS",
    "compile_config",
    "deep_merge_dicts",
    "get_config",
    "load_experiment",
    "parse_overrides",
    "parse_value",
    "to_plain",
]
