"""Reward functions: what the collectors train on in place of the env's reward.

``env.reward_fn`` names a registered function (``""``: the env's reward as it is) and
``env.reward_fn_kwargs`` its keyword arguments. The collectors of both pipelines call it
after every env step, with that step's rows (one per env copy and agent)::

    fn(obs, action, reward, next_obs, info, **kwargs) -> reward

``obs``: the raw observations the policy acted on; ``action``: its actions; ``reward``:
the env's rewards (float ``[B]``); ``next_obs``: the raw observations after the step (a
finished copy's first of the next episode; its last is ``info["final_obs"]``); ``info``:
the env's info dict of the step (per copy). It returns the rewards to train on, float
``[B]``. The episode returns the run reports (``charts/episodic_return``, evaluations)
stay the env's own, so runs with and without a reward function compare; the mean and
standard deviation of what was trained on are ``data/reward_mean`` and ``data/reward_std``.
This is verl's ``reward_fn`` and the air-combat design's extra reward in train.py.

Your own registers with :func:`register_reward_fn`, in a module the config imports
(``env.import_modules``) or in the ``-c`` file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from torch import Tensor

from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.registry import Registry

RewardFn = Callable[..., Tensor]
REWARD_FN_REGISTRY: Registry[RewardFn] = Registry("reward function")


def register_reward_fn(
    name: str, fn: RewardFn | None = None, *, force: bool = False
) -> RewardFn | Callable[[RewardFn], RewardFn]:
    """Registers ``fn(obs, action, reward, next_obs, info, **kwargs) -> reward`` under
    ``name`` (or, without ``fn``, decorates the function to register).

    Raises:
        RegistryError: ``name`` is taken and ``force`` is False, or ``name`` is empty.
    """
    return REWARD_FN_REGISTRY.register(name, fn, force=force)


def build_reward_fn(name: str, kwargs: Mapping[str, Any]) -> Callable[..., Tensor] | None:
    """The reward function ``env.reward_fn`` names, its ``env.reward_fn_kwargs`` bound and
    its output checked; None for ``""``.

    Raises:
        RegistryError: an unknown name (a ``ConfigError``).
        ConfigError: kwargs given without a function.
    """
    if not name:
        if kwargs:
            raise ConfigError("env.reward_fn_kwargs is set but env.reward_fn names no function")
        return None
    fn = functools.partial(REWARD_FN_REGISTRY.get(name), **dict(kwargs))

    def checked(**step: Any) -> Tensor:
        out = fn(**step)
        reward = step["reward"]
        if not isinstance(out, Tensor) or out.shape != reward.shape:
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise DingLiteError(
                f"reward function '{name}' returned {shape} for rewards of shape "
                f"{tuple(reward.shape)}; it must return a tensor of the same shape"
            )
        return out.to(reward.dtype)

    return checked


@register_reward_fn("clip")
def clip_reward(
    obs: Tensor,
    action: Tensor,
    reward: Tensor,
    next_obs: Tensor,
    info: Any,
    low: float = -1.0,
    high: float = 1.0,
) -> Tensor:
    """Each reward clipped to ``[low, high]`` (the Atari convention: ``[-1, 1]``)."""
    return reward.clamp(low, high)


@register_reward_fn("scale")
def scale_reward(
    obs: Tensor, action: Tensor, reward: Tensor, next_obs: Tensor, info: Any, factor: float = 1.0
) -> Tensor:
    """Each reward times ``factor``."""
    return reward * factor
