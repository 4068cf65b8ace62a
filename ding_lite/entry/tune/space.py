"""What a tuning study searches: PPO's search spaces, their file format, and sampling.

A space maps dotted config keys to distributions. One more name is allowed beside the
config keys, ``minibatches``: the number of minibatches a rollout is cut into, from which
``policy.learn.batch_size`` is derived (``n_steps * env.num_envs / minibatches``), so that
every sampled batch size divides its rollout. Before a study starts, every combination of
``policy.collect.n_steps`` and ``minibatches`` is compiled against the experiment
(:func:`check_space`): a space that could sample an invalid config is refused, no trial is.
"""

from __future__ import annotations

import itertools
import json
import math
import runpy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ding_lite.config.config import compile_config
from ding_lite.utils.errors import ConfigError

MINIBATCHES = "minibatches"  # the derived name: policy.learn.batch_size = rollout / it
BATCH_KEY = "policy.learn.batch_size"
N_STEPS_KEY = "policy.collect.n_steps"
KINDS = ("float", "int", "categorical")


@dataclass(frozen=True)
class Param:
    """One searched value.

    Attributes:
        key: a dotted config key (``policy.learn.learning_rate``) or ``minibatches``.
        kind: "float", "int" or "categorical".
        low: lower bound (float, int).
        high: upper bound, included (float, int).
        log: sample on a log scale (float, int).
        choices: the values (categorical): numbers, strings, booleans, None or lists.
    """

    key: str
    kind: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[Any, ...] = ()

    @property
    def short(self) -> str:
        """The name shown in progress lines: the key's last part."""
        return self.key.rsplit(".", 1)[-1]


def _floats(key: str, low: float, high: float, log: bool = False) -> Param:
    return Param(key, "float", low, high, log)


def _choices(key: str, *values: Any) -> Param:
    return Param(key, "categorical", choices=tuple(values))


# In the spirit of rl-zoo's PPO sampler: the learning rate and entropy weight log-uniform,
# rollout and minibatch sizes from lists, the rest from the values PPO is usually run with.
_COMMON = (
    _floats("policy.learn.learning_rate", 5e-5, 5e-3, log=True),
    _choices(MINIBATCHES, 2, 4, 8, 16),
    _choices("policy.learn.n_epochs", 3, 5, 10, 20),
    _choices("policy.learn.clip_ratio", 0.1, 0.2, 0.3),
    _floats("policy.learn.value_weight", 0.2, 1.0),
    _choices("policy.collect.gae_lambda", 0.8, 0.9, 0.92, 0.95, 0.98, 1.0),
    _choices("policy.learn.grad_clip_norm", 0.3, 0.5, 1.0, 5.0),
    _choices("policy.model.obs_norm", False, True),
)
DISCRETE_SPACE = (
    *_COMMON,
    _choices(N_STEPS_KEY, 32, 64, 128, 256),
    _floats("policy.learn.entropy_weight", 1e-8, 0.1, log=True),
    _choices("policy.collect.gamma", 0.95, 0.98, 0.99, 0.995, 0.999),
    _choices("policy.model.hidden_sizes", [32, 32], [64, 64], [128, 128]),
)
CONTINUOUS_SPACE = (
    *_COMMON,
    _choices(N_STEPS_KEY, 64, 128, 256, 512),
    _floats("policy.learn.entropy_weight", 1e-8, 1e-2, log=True),
    _choices("policy.collect.gamma", 0.9, 0.95, 0.97, 0.98, 0.99),
    _choices("policy.model.hidden_sizes", [64, 64], [128, 128], [256, 256]),
    _floats("policy.model.log_std_init", -2.0, 0.0),
    _choices("policy.learn.lr_anneal", False, True),
)


def default_space(action_kind: str) -> tuple[Param, ...]:
    """The bundled space for an env whose action space is of ``action_kind`` ("discrete",
    "continuous", ...): discrete and multi-discrete envs get the discrete one."""
    return DISCRETE_SPACE if action_kind in ("discrete", "multi_discrete") else CONTINUOUS_SPACE


def load_space(path: str | Path) -> tuple[Param, ...]:
    """Reads a space file: YAML (.yaml, .yml), JSON (.json) or Python (.py, defining a dict
    named ``space``), mapping each key to a distribution::

        policy.learn.learning_rate: {type: float, low: 1.0e-5, high: 1.0e-2, log: true}
        policy.learn.n_epochs: {type: int, low: 3, high: 20}
        policy.collect.n_steps: [64, 128, 256]        # a list: a categorical
        minibatches: {type: categorical, choices: [4, 8]}

    Raises:
        ConfigError: no such file, unparsable, or a bad entry (named in the message).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"space file not found: {path}")
    try:
        if path.suffix == ".py":
            data = runpy.run_path(str(path)).get("space")
        elif path.suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        else:
            raise ConfigError(f"space file {path}: use .yaml, .yml, .json or .py")
    except (yaml.YAMLError, json.JSONDecodeError, SyntaxError, OSError) as err:
        raise ConfigError(f"cannot read space file {path}: {err}".splitlines()[0]) from None
    except ConfigError:
        raise
    except Exception as err:  # a .py file that fails to run
        raise ConfigError(f"space file {path} failed to run: {err}") from None
    if not isinstance(data, Mapping) or not data:
        what = "a dict named 'space'" if path.suffix == ".py" else "a mapping at the top"
        raise ConfigError(f"space file {path} must hold {what} (dotted key -> distribution)")
    return tuple(_param(str(key), spec, path) for key, spec in data.items())


def _param(key: str, spec: Any, path: Path) -> Param:
    where = f"space file {path}, {key}"
    if isinstance(spec, list):
        spec = {"type": "categorical", "choices": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a list of choices or a mapping with 'type'")
    kind = spec.get("type")
    if kind not in KINDS:
        raise ConfigError(f"{where}: type must be one of {', '.join(KINDS)}, got {kind!r}")
    allowed = {"type", "choices"} if kind == "categorical" else {"type", "low", "high", "log"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; allowed: {sorted(allowed)}")
    if kind == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"{where}: 'choices' must be a non-empty list")
        return Param(key, kind, choices=tuple(choices))
    low, high, log = _number(spec.get("low")), _number(spec.get("high")), spec.get("log", False)
    number = int if kind == "int" else (int, float)
    if not all(isinstance(v, number) and not isinstance(v, bool) for v in (low, high)):
        raise ConfigError(f"{where}: 'low' and 'high' must be {kind} numbers")
    if low > high or (log and low <= 0) or not isinstance(log, bool):
        raise ConfigError(f"{where}: need low <= high (and low > 0 with log: true)")
    return Param(key, kind, float(low) if kind == "float" else low, high, log)


def _number(value: Any) -> Any:
    """YAML reads ``1e-5`` (no dot) as a string: such a string is taken as the float."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _label(value: Any) -> Any:
    """A choice as Optuna stores it: lists become their JSON text."""
    return json.dumps(value) if isinstance(value, list | dict) else value


def sample(trial: Any, space: tuple[Param, ...], num_envs: int, n_steps: int) -> dict[str, Any]:
    """Draws one point of ``space`` through an Optuna trial; returns dotted key -> value,
    ``minibatches`` already turned into ``policy.learn.batch_size``."""
    values: dict[str, Any] = {}
    for param in space:
        if param.kind == "float":
            values[param.key] = trial.suggest_float(param.key, param.low, param.high, log=param.log)
        elif param.kind == "int":
            values[param.key] = trial.suggest_int(
                param.key, int(param.low), int(param.high), log=param.log
            )
        else:
            labels = [_label(c) for c in param.choices]
            picked = trial.suggest_categorical(param.key, labels)
            values[param.key] = param.choices[labels.index(picked)]
    return derive_batch(values, num_envs, n_steps)


def derive_batch(values: dict[str, Any], num_envs: int, n_steps: int) -> dict:
    """``values`` with ``minibatches`` replaced by the batch size it gives (``n_steps``:
    the experiment's, when the space does not search it)."""
    values = dict(values)
    minibatches = values.pop(MINIBATCHES, None)
    if minibatches is not None:
        steps = values.get(N_STEPS_KEY, n_steps)
        values[BATCH_KEY] = max(1, int(steps) * num_envs // int(minibatches))
    return values


def nested(values: Mapping[str, Any]) -> dict:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}``: dotted keys as a config's nested dict."""
    tree: dict = {}
    for key, value in values.items():
        node = tree
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return tree


def check_space(experiment: str | Mapping, space: tuple[Param, ...]) -> None:
    """Compiles the experiment with every key of ``space`` at a value it can take, and with
    every combination of the rollout and minibatch choices, so that no trial's config can
    be invalid.

    Raises:
        ConfigError: a key the config does not have, a value it refuses, a derived batch
            size that does not fit (each named with the value), or ``minibatches`` and
            ``policy.learn.batch_size`` both searched.
    """
    keys = [p.key for p in space]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"search space names a key twice: {keys}")
    if MINIBATCHES in keys and BATCH_KEY in keys:
        raise ConfigError(f"search space: give {MINIBATCHES} or {BATCH_KEY}, not both")
    base = compile_config(experiment)
    num_envs, n_steps = base.env.num_envs, base.policy.collect.n_steps
    by_key = {p.key: p for p in space}
    sized = [by_key[k] for k in (N_STEPS_KEY, MINIBATCHES) if k in by_key]
    for param in sized:
        if param.kind == "float":
            raise ConfigError(f"search space: {param.key} must be int or categorical")
    grids = [_grid(p) for p in sized]
    others = [p for p in space if p not in sized]
    # Each other key at its bounds or every choice; the sizes at every combination.
    rounds = max([len(_grid(p)) for p in others] + [1])
    for combo in itertools.product(*grids):
        for i in range(rounds):
            values = {p.key: v for p, v in zip(sized, combo, strict=True)}
            for param in others:
                grid = _grid(param)
                values[param.key] = grid[i % len(grid)]
            values = derive_batch(values, num_envs, n_steps)
            try:
                compile_config(experiment, nested(values))
            except ConfigError as err:
                shown = {k: v for k, v in values.items() if k in (N_STEPS_KEY, BATCH_KEY)}
                raise ConfigError(f"search space gives an invalid config {shown}: {err}") from None


def _grid(param: Param) -> list[Any]:
    """Values that stand for ``param`` when a space is checked: its choices, its bounds
    (and every int of a short int range, which a rollout size may be)."""
    if param.kind == "categorical":
        return list(param.choices)
    if param.kind == "int":
        low, high = int(param.low), int(param.high)
        return list(range(low, high + 1)) if high - low <= 64 else [low, high]
    return [param.low, param.high] if not math.isclose(param.low, param.high) else [param.low]
