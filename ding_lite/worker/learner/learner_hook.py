"""Learner hooks: positions, priorities, a registry, and the built-in hooks.

A hook is a callable object run by ``BaseLearner.call_hook(position)`` at one of four
positions. Hooks at a position run by ascending ``priority``; ties keep registration order.
A hook may define ``state_dict()`` / ``load_state_dict()``; that state rides in checkpoints.
"""

from __future__ import annotations

import inspect
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from easydict import EasyDict

from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.utils.registry import Registry, suggest

if TYPE_CHECKING:
    from ding_lite.worker.learner.base_learner import BaseLearner

POSITIONS = ("before_run", "after_run", "before_iter", "after_iter")

LEARNER_HOOK_REGISTRY: Registry[type[LearnerHook]] = Registry("learner hook")


class Hook:
    """Something with a name and a priority (lower runs first).

    Extra keyword arguments are accepted, as DI-engine's ``Hook`` accepts them, and named
    in a warning (a subclass that wants them takes them itself).
    """

    def __init__(self, name: str, priority: float, **kwargs: Any) -> None:
        self.name = name
        self.priority = priority
        if kwargs:
            get_logger("learner").warning(f"hook '{name}': ignoring option(s) {sorted(kwargs)}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, priority={self.priority})"


class LearnerHook(Hook):
    """A hook a learner runs at ``position``.

    Args:
        name: unique name within a learner; keys the hook's state in checkpoints.
        priority: lower runs first at the same position.
        position: one of ``before_run``, ``after_run``, ``before_iter``, ``after_iter``.
    """

    #: The positions a learner hook may take (DI-engine's ``LearnerHook.positions``).
    positions: tuple[str, ...] = POSITIONS
    #: Priority used when none is given (built-ins set their own).
    default_priority: float = 50

    def __init__(
        self, name: str, priority: float | None = None, *, position: str, **kwargs: Any
    ) -> None:
        super().__init__(name, self.default_priority if priority is None else priority, **kwargs)
        if position not in POSITIONS:
            raise ValueError(
                f"unknown hook position '{position}'{suggest(position, list(POSITIONS))}; "
                f"known: {', '.join(POSITIONS)}"
            )
        self.position = position

    def __call__(self, engine: BaseLearner) -> None:
        raise NotImplementedError


HookClass = TypeVar("HookClass", bound=type[LearnerHook])


@overload
def register_learner_hook(name: str, cls: HookClass, force: bool = False) -> HookClass: ...


@overload
def register_learner_hook(
    name: str, cls: None = None, force: bool = False
) -> Callable[[HookClass], HookClass]: ...


def register_learner_hook(
    name: str, cls: type[LearnerHook] | None = None, force: bool = False
) -> Any:
    """Registers a hook class so configs can name it (``type: name``). Usable as decorator.

    Raises:
        RegistryError: ``name`` is taken and ``force`` is false (an unknown ``type`` in a
            config is one too: a ``ConfigError``).
    """
    return LEARNER_HOOK_REGISTRY.register(name, cls, force=force)


class _EveryN(LearnerHook):
    """Runs ``fire`` every ``freq`` iterations (on every call at run positions)."""

    def __init__(
        self, name: str, priority: float | None = None, *, position: str, freq: int = 1
    ) -> None:
        super().__init__(name, priority, position=position)
        self.freq = max(int(freq), 1)

    def __call__(self, engine: BaseLearner) -> None:
        if self.position.endswith("_iter") and engine.train_iter % self.freq != 0:
            return
        self.fire(engine)

    def fire(self, engine: BaseLearner) -> None:
        raise NotImplementedError


@register_learner_hook("load_ckpt")
class LoadCkptHook(LearnerHook):
    """Loads a checkpoint (a file, or the newest complete one in a folder) into the learner."""

    default_priority = 20

    def __init__(
        self, name: str, priority: float | None = None, *, position: str, path: str
    ) -> None:
        super().__init__(name, priority, position=position)
        self.path = path

    def __call__(self, engine: BaseLearner) -> None:
        engine.load_checkpoint(self.path)


@register_learner_hook("save_ckpt")
class SaveCkptHook(_EveryN):
    """Saves a checkpoint every ``freq`` iterations (or once at a run position)."""

    default_priority = 40

    def fire(self, engine: BaseLearner) -> None:
        engine.save_checkpoint()


@register_learner_hook("log_reduce")
class LogReduceHook(LearnerHook):
    """Adds each iteration's ``learn_info`` to the log buffer and to tensorboard.

    Tensorboard also gets the seconds each timed phase took (``perf/update_s``, ...).
    """

    default_priority = 10

    def __call__(self, engine: BaseLearner) -> None:
        info = engine.learn_info
        for key, value in info.items():
            engine.log_buffer[key].append(value)
        if engine.tb_logger is not None:
            step = engine.envstep if engine.envstep >= 0 else engine.train_iter
            for key, value in info.items():
                engine.tb_logger.add_scalar(_tb_name(key), value, step)
            engine.tb_logger.add_scalar("charts/train_iter", engine.train_iter, step)
            # Seconds per phase of this iteration (Sample Factory-style timing).
            for phase, seconds in engine.timer.pop().items():
                engine.tb_logger.add_scalar(f"perf/{phase}_s", seconds, step)


@register_learner_hook("log_show")
class LogShowHook(_EveryN):
    """Logs the means of the buffered scalars every ``freq`` iterations, then clears them."""

    default_priority = 20

    def fire(self, engine: BaseLearner) -> None:
        if not engine.log_buffer:
            return
        means = {k: sum(v) / len(v) for k, v in engine.log_buffer.items() if v and _finite_all(v)}
        shown = " ".join(f"{k}={means[k]:.4g}" for k in sorted(means))
        engine.logger.info(
            f"[{engine.name}] iter={engine.train_iter} envstep={engine.envstep} {shown}"
        )
        engine.log_buffer.clear()


def _finite_all(values: list[float]) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


_LOSS_NAMES = {
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clipfrac",
    "explained_variance",
    "kl_ref",
}


def _tb_name(key: str) -> str:
    """CleanRL's tensorboard layout: losses/* for loss terms, charts/* for the rest."""
    if "/" in key:
        return key
    return f"losses/{key}" if key in _LOSS_NAMES else f"charts/{key}"


def hooks_with_load_path(learner_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The ``learner.hook`` config with ``learner.load_path`` (DI-engine's key) turned into
    the ``load_ckpt_before_run`` shorthand.

    Raises:
        ConfigError: both name a checkpoint, and not the same one.
    """
    hooks = dict(learner_cfg.get("hook") or {})
    path = learner_cfg.get("load_path") or ""
    if path:
        if hooks.get("load_ckpt_before_run") not in (None, "", path):
            raise ConfigError(
                "learner.load_path and learner.hook.load_ckpt_before_run name different "
                "checkpoints; set one of them"
            )
        hooks["load_ckpt_before_run"] = path
    return hooks


def build_hooks(hook_cfg: Mapping[str, Any]) -> list[LearnerHook]:
    """Builds hooks from ``learner.hook`` config.

    Shorthands map ``<hook>_<position>: value`` to a built-in hook: ``save_ckpt_after_iter:
    100`` saves every 100 iterations, ``log_show_after_iter: 10`` logs every 10,
    ``load_ckpt_before_run: PATH`` loads, ``save_ckpt_after_run: true`` saves at the end. A
    false value (0, false, "", null) disables that hook. A full form is a mapping with
    ``type`` (a registered hook name), ``position`` and optionally ``name``, ``priority`` and
    ``ext_args`` (keyword arguments of the hook class).

    Raises:
        ConfigError: unknown hook type or position, or a malformed entry.
    """
    hooks: list[LearnerHook] = []
    for key, value in hook_cfg.items():
        if isinstance(value, Mapping):
            hooks.append(_build_full(key, value))
            continue
        if not value:
            continue
        hooks.append(_build_shorthand(key, value))
    return hooks


def _build_full(key: str, spec: Mapping[str, Any]) -> LearnerHook:
    unknown = set(spec) - {"name", "type", "position", "priority", "ext_args"}
    if unknown:
        raise ConfigError(
            f"hook '{key}': unknown field(s) {sorted(unknown)}; "
            "allowed: name, type, position, priority, ext_args"
        )
    if "type" not in spec or "position" not in spec:
        raise ConfigError(f"hook '{key}' needs 'type' and 'position'")
    cls = LEARNER_HOOK_REGISTRY.get(str(spec["type"]))
    if "ext_args" in inspect.signature(cls).parameters:  # DI-engine style: one mapping
        kwargs: dict[str, Any] = {"ext_args": EasyDict(spec.get("ext_args") or {})}
    else:
        kwargs = dict(spec.get("ext_args") or {})
    if "priority" in spec:
        kwargs["priority"] = spec["priority"]
    try:
        return cls(spec.get("name", key), position=spec["position"], **kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"hook '{key}': {err}") from None


def _build_shorthand(key: str, value: Any) -> LearnerHook:
    for position in POSITIONS:
        if key.endswith("_" + position):
            hook_type = key[: -len(position) - 1]
            break
    else:
        raise ConfigError(
            f"hook shorthand '{key}' must end with one of: {', '.join(POSITIONS)} "
            "(e.g. save_ckpt_after_iter: 100)"
        )
    cls = LEARNER_HOOK_REGISTRY.get(hook_type)
    if issubclass(cls, LoadCkptHook):
        if not isinstance(value, str):
            raise ConfigError(f"hook shorthand '{key}' takes a path, got {value!r}")
        return cls(key, position=position, path=value)
    if issubclass(cls, _EveryN):
        if isinstance(value, bool):
            freq = 1
        elif isinstance(value, int) and value > 0:
            freq = value
        else:
            raise ConfigError(f"hook shorthand '{key}' takes a positive int or bool, got {value!r}")
        return cls(key, position=position, freq=freq)
    try:
        return cls(key, position=position)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"hook shorthand '{key}': {err}") from None


def sort_hooks(hooks: list[LearnerHook]) -> dict[str, list[LearnerHook]]:
    """Groups hooks by position, each list in ascending priority, ties in given order."""
    grouped: dict[str, list[LearnerHook]] = defaultdict(list)
    for hook in hooks:
        grouped[hook.position].append(hook)
    return {pos: sorted(grouped[pos], key=lambda h: h.priority) for pos in POSITIONS}


class CallbackHook(LearnerHook):
    """Calls ``callback(engine)``: how the comm learner hands its publish step to the
    learner, and a league its bookkeeping."""

    default_priority = 90  # after logging and checkpoints

    def __init__(
        self,
        name: str,
        priority: float | None = None,
        *,
        position: str,
        callback: Callable[[Any], object],
    ) -> None:
        super().__init__(name, priority, position=position)
        self._callback = callback

    def __call__(self, engine: Any) -> None:
        self._callback(engine)
