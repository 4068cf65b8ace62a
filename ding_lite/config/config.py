"""Config loading, merging, validation and dotted overrides.

``compile_config`` is the one way a config becomes the resolved ``EasyDict`` a run uses:
defaults <- experiment (bundled name, Python/YAML file or dict) <- keyword arguments <-
dotted overrides. Unknown keys and wrong-typed values raise ``ConfigError`` naming the
closest valid key, and nothing is changed.
"""

from __future__ import annotations

import copy
import importlib
import math
import runpy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from easydict import EasyDict

from ding_lite.config.constraints import CONSTRAINTS, check_batch_arithmetic, check_exploration
from ding_lite.config.defaults import (
    DEFAULT_CONFIG,
    FREE_FORM_KEYS,
    MULTI_TYPE_KEYS,
    NULLABLE_TYPES,
)
from ding_lite.config.foreign_names import foreign_hint
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.registry import suggest

EXPERIMENTS = (
    "cartpole_ppo",
    "pendulum_ppo",
    "gym_ppo",
    "cartpole_ppo_parallel",
    "pendulum_ppo_parallel",
    "aircombat_ppo",
    "aircombat_ppo_parallel",
    "aircombat_ppo_long",
    "mujoco_ppo",
    "mujoco_ppo_parallel",
    "cartpole_lstm_ppo",
    "pendulum_lstm_ppo",
    "aircombat_selfplay_ppo",
    "aircombat_league_ppo",
    "matrix_league_ppo",
    "matrix_selfplay_ppo",
    "cartpole_reinforce_pp",
    "cartpole_grpo",
    "grid_ppo",
    "grid_ppo_parallel",
    # The zoo (ding_lite.config.zoo): one tuned experiment per task of rl-zoo's PPO table.
    "zoo_acrobot",
    "zoo_mountaincar",
    "zoo_mountaincar_continuous",
    "zoo_lunarlander",
    "zoo_lunarlander_continuous",
    "zoo_pendulum",
    "zoo_halfcheetah",
    "zoo_hopper",
    "zoo_walker2d",
    "zoo_ant",
    "zoo_swimmer",
)

FLOAT32_MAX = 3.4028234663852886e38


def deep_merge_dicts(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Returns a new dict: ``base`` with ``update`` merged in, recursing into dicts."""
    merged = copy.deepcopy(dict(base))
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge_dicts(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def to_plain(obj: Any) -> Any:
    """A config (EasyDict, tuples...) as plain JSON-ready dicts and lists."""
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj


def _all_keys(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        keys.append(dotted)
        if isinstance(value, Mapping) and dotted not in FREE_FORM_KEYS + ("learner.hook",):
            keys.extend(_all_keys(value, dotted + "."))
    return keys


def _is_free_form(dotted: str) -> bool:
    return any(
        dotted == k or dotted.startswith(k + ".") for k in FREE_FORM_KEYS + ("learner.hook",)
    )


def _unknown_key(dotted: str) -> ConfigError:
    leaves = [k for k in _all_keys(DEFAULT_CONFIG) if not _is_section(k)]
    leaf = dotted.rsplit(".", 1)[-1]
    same_leaf = [k for k in leaves if k.rsplit(".", 1)[-1] == leaf]
    if same_leaf:
        hint = f" (did you mean '{same_leaf[0]}'?)"
    elif foreign := foreign_hint(dotted):  # another library's name: what it means here
        hint = foreign
    else:
        hint = suggest(dotted, leaves)
        if not hint:
            by_leaf = {k.rsplit(".", 1)[-1]: k for k in leaves}
            close = suggest(leaf, list(by_leaf))
            hint = f" (did you mean '{by_leaf[close.split(chr(39))[1]]}'?)" if close else ""
    return ConfigError(f"unknown config key '{dotted}'{hint}")


def _is_section(dotted: str) -> bool:
    node: Any = DEFAULT_CONFIG
    for part in dotted.split("."):
        node = node[part]
    return isinstance(node, Mapping) and not _is_free_form(dotted)


def _type_name(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)


def _convert_value(dotted: str, value: Any, default: Any) -> Any:
    """``value`` converted to the default's type (see :func:`_check_value`)."""
    if value is None and dotted in NULLABLE_TYPES:
        return None
    numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
    numeric = numeric or bool({int, float} & set(NULLABLE_TYPES.get(dotted, ())))
    if isinstance(value, str) and numeric:
        # YAML 1.1 reads "1e-3" as text; accept numbers written that way.
        parsed = parse_value(value)
        value = parsed if isinstance(parsed, (int, float)) else value
    if dotted in MULTI_TYPE_KEYS:
        if not isinstance(value, MULTI_TYPE_KEYS[dotted]) or isinstance(value, bool):
            raise ConfigError(
                f"config key '{dotted}' must be {_type_name(MULTI_TYPE_KEYS[dotted])}, "
                f"got {value!r}"
            )
        return value
    if default is None:
        types = NULLABLE_TYPES.get(dotted)
        if value is None or types is None:
            return value
        expected: tuple[type, ...] = types
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, bool):
        expected = (bool,)
    elif isinstance(default, int):
        expected = (int,)
    elif isinstance(default, float):
        expected = (float,)
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, str):
        expected = (str,)
    elif isinstance(default, (list, tuple)):
        expected = (list, tuple)
    elif isinstance(default, Mapping):
        expected = (Mapping,)
    else:
        expected = (type(default),)
    if int in expected and isinstance(value, float) and value.is_integer():
        value = int(value)
    if bool not in expected and isinstance(value, bool) or not isinstance(value, expected):
        raise ConfigError(
            f"config key '{dotted}' must be {_type_name(expected)}, got {value!r} "
            f"({type(value).__name__})"
        )
    if isinstance(value, (list, tuple)):
        value = list(value)
    return value


def _check_value(dotted: str, value: Any, default: Any) -> Any:
    """Returns ``value`` converted to the default's type, or raises ``ConfigError``.

    A number of a key that takes floats must be finite in float32 (|x| <= 3.4e38): floats
    end up in float32 tensors, where a larger value is inf and training only makes NaNs.
    """
    try:
        value = _convert_value(dotted, value, default)
    except OverflowError:  # an int too large for a float
        digits = len(str(value).lstrip("-"))
        raise ConfigError(
            f"config key '{dotted}' must be finite in float32 (|x| <= 3.4e38), got a number "
            f"of {digits} digits"
        ) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key '{dotted}' must be finite, got {value!r}")
    takes_float = isinstance(default, float) or float in NULLABLE_TYPES.get(dotted, ())
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and (takes_float or isinstance(value, float)) and abs(value) > FLOAT32_MAX:
        raise ConfigError(
            f"config key '{dotted}' must be finite in float32 (|x| <= 3.4e38), got {value:.4g}"
        )
    return value


def _validate(
    tree: Mapping[str, Any], defaults: Mapping[str, Any], prefix: str = ""
) -> dict[str, Any]:
    """Checks every key of ``tree`` against ``defaults``; returns a converted copy."""
    out = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if not isinstance(key, str):
            raise ConfigError(f"config keys must be strings, got {key!r} under '{prefix}'")
        if _is_free_form(dotted) and dotted not in FREE_FORM_KEYS + ("learner.hook",):
            out[key] = copy.deepcopy(value)
            continue
        if key not in defaults:
            raise _unknown_key(dotted)
        default = defaults[key]
        if isinstance(default, Mapping) and not _is_free_form(dotted):
            if not isinstance(value, Mapping):
                raise ConfigError(f"config key '{dotted}' is a section; got {value!r}")
            out[key] = _validate(value, default, dotted + ".")
        else:
            out[key] = _check_value(dotted, value, default)
        if dotted in CONSTRAINTS and out[key] is not None:
            ok, what = CONSTRAINTS[dotted]
            if not ok(out[key]):
                raise ConfigError(f"config key '{dotted}' must be {what}, got {out[key]!r}")
    return out


def parse_value(raw: str) -> Any:
    """Parses an override's text: numbers, true/false, none/null, [lists], {dicts}, or text."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null", "~"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text[:1] in "[{":
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ConfigError(f"cannot parse value {raw!r}: {err}") from None
    return raw


def parse_overrides(overrides: Iterable[str]) -> dict[str, Any]:
    """Turns ``["a.b=1", "c=x"]`` into the nested dict ``{"a": {"b": 1}, "c": "x"}``."""
    nested: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r} conflicts with an earlier override")
        node[parts[-1]] = _coerce_text(key, raw)
    return nested


def _coerce_text(dotted: str, raw: str) -> Any:
    """Parses ``raw``, keeping it as text where the key's default is a string."""
    node: Any = DEFAULT_CONFIG
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return parse_value(raw)
        node = node[part]
    if dotted in MULTI_TYPE_KEYS:
        return parse_value(raw)
    if isinstance(node, str) or (dotted == "exp_dir" and raw.lower() not in ("none", "null")):
        return raw
    return parse_value(raw)


def load_experiment(name_or_file: str | Mapping[str, Any]) -> dict[str, Any]:
    """Returns the (partial) config of a bundled experiment, a Python/YAML file or a dict.

    A Python file defines ``config = dict(...)``; a YAML file holds the mapping itself.
    """
    if isinstance(name_or_file, Mapping):
        plain: dict[str, Any] = to_plain(name_or_file)
        return plain
    text = str(name_or_file)
    path = Path(text)
    if path.suffix in (".py", ".yaml", ".yml", ".json"):
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        if path.suffix == ".py":
            try:
                namespace = runpy.run_path(str(path))
            except Exception as err:
                raise ConfigError(f"config file {path} failed to run: {err}") from None
            if not isinstance(namespace.get("config"), Mapping):
                raise ConfigError(f"config file {path} must define a dict named 'config'")
            plain = to_plain(namespace["config"])
            return plain
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as err:
            raise ConfigError(f"cannot parse config file {path}: {err}") from None
        if not isinstance(data, Mapping):
            raise ConfigError(f"config file {path} must hold a mapping at the top")
        plain = to_plain(data)
        return plain
    if text not in EXPERIMENTS:
        zoo = [name for name in EXPERIMENTS if name.startswith("zoo_")]
        rest = [name for name in EXPERIMENTS if name not in zoo]
        raise ConfigError(
            f"unknown experiment '{text}'{suggest(text, list(EXPERIMENTS))}; bundled: "
            f"{', '.join(rest)}, and {len(zoo)} zoo_<task> experiments (ding-lite list); "
            "or pass a .py/.yaml config file"
        )
    module = importlib.import_module(f"ding_lite.config.experiments.{text}")
    plain = copy.deepcopy(module.config)
    return plain


def get_config(name: str) -> EasyDict:
    """Returns a full copy (defaults included) of a bundled experiment's config to edit."""
    return EasyDict(
        deep_merge_dicts(DEFAULT_CONFIG, _validate(load_experiment(name), DEFAULT_CONFIG))
    )


def compile_config(
    cfg: str | Mapping[str, Any],
    overrides: Iterable[str] | Mapping[str, Any] = (),
    **top_level: Any,
) -> EasyDict:
    """Resolves a config for a run.

    Args:
        cfg: a bundled experiment name, a .py/.yaml config file, or a (partial) dict.
        overrides: dotted ``key.sub=value`` strings, or a nested dict of the same.
        **top_level: values for top-level keys (``seed``, ``device``, ``exp_dir``,
            ``max_env_step``, ...) applied before the overrides; ``None`` leaves a key as is.

    Returns:
        The full, validated config as an ``EasyDict``.

    Raises:
        ConfigError: unknown experiment or key, wrong-typed or out-of-range value.
    """
    merged = deep_merge_dicts(DEFAULT_CONFIG, _validate(load_experiment(cfg), DEFAULT_CONFIG))
    kwargs = {k: v for k, v in top_level.items() if v is not None}
    merged = deep_merge_dicts(merged, _validate(kwargs, DEFAULT_CONFIG))
    if not isinstance(overrides, Mapping):
        overrides = parse_overrides(overrides)
    merged = deep_merge_dicts(merged, _validate(overrides, DEFAULT_CONFIG))
    check_batch_arithmetic(merged)
    check_exploration(merged)
    return EasyDict(merged)


def compile_sent_config(cfg: Any, device: str | None = None) -> EasyDict:
    """Resolves a config another process sent (a start task's): a mapping only.

    A name or a path would make this process load an experiment or run a ``.py`` file;
    only the process's own command line may ask for that. ``device``: the worker's own
    ``--device``, over the config's.

    Raises:
        ConfigError: ``cfg`` is not a mapping, or as :func:`compile_config`.
    """
    if not isinstance(cfg, Mapping):
        raise ConfigError(
            f"the config sent must be a JSON object, got {type(cfg).__name__}: a worker runs "
            "no experiment or file a peer names"
        )
    return compile_config(cfg, device=device)
