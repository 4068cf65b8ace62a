"""A registry of advantage estimators, so configs can name one (``adv_estimator: gae``).

An estimator is a function with the signature of :func:`~ding_lite.rl_utils.gae.gae`
returning ``(advantages, returns)``, plus a flag telling the PPO update whether to
normalize advantages per minibatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from ding_lite.utils.registry import Registry

from .gae import gae_with_returns

AdvFn = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, float, float], tuple[Tensor, Tensor]]
"""``fn(rewards, values, next_values, terminated, dones, gamma, lam) -> (adv, returns)``."""


@dataclass(frozen=True)
class AdvEstimator:
    """A registered advantage estimator.

    Attributes:
        name: The name it is registered under.
        fn: ``fn(rewards, values, next_values, terminated, dones, gamma, lam)`` taking
            [T, B] tensors and returning ``(advantages, returns)``, both [T, B].
        normalize: Whether the PPO update normalizes advantages per minibatch.
    """

    name: str
    fn: AdvFn
    normalize: bool


ADV_ESTIMATOR_REGISTRY: Registry[AdvEstimator] = Registry("advantage estimator")


def register_adv_estimator(
    name: str, fn: AdvFn | None = None, normalize: bool = True, *, force: bool = False
) -> Any:
    """Registers an advantage estimator under ``name``; without ``fn``, a decorator.

    Either ``register_adv_estimator("td0", td0, normalize=False)`` or::

        @register_adv_estimator("td0", normalize=False)
        def td0(rewards, values, next_values, terminated, dones, gamma, lam): ...

    Args:
        name: Name used in configs (``policy.learn.adv_estimator``); a non-empty string.
        fn: The estimator; see :data:`AdvFn`. Omitted, the call returns a decorator.
        normalize: Whether the PPO update normalizes this estimator's advantages per
            minibatch.
        force: Replace an estimator already registered under ``name`` instead of raising.

    Returns:
        The registered :class:`AdvEstimator`; the decorator form returns the decorated
        function itself, so it stays callable as written.

    Raises:
        RegistryError: If ``name`` is taken and ``force`` is False, or ``name`` is empty
            (a ``KeyError`` and a ``ValueError``, as every ding_lite registry raises).
        TypeError: If ``fn`` is not callable.
    """

    def add(fn: AdvFn) -> AdvEstimator:
        if not callable(fn):
            raise TypeError(f"advantage estimator {name!r}: fn must be callable; got {fn!r}")
        estimator = AdvEstimator(name=name, fn=fn, normalize=bool(normalize))
        return ADV_ESTIMATOR_REGISTRY.register(name, estimator, force=force)

    if fn is None:

        def decorator(fn: AdvFn) -> AdvFn:
            add(fn)
            return fn

        return decorator
    return add(fn)


def get_adv_estimator(name: str) -> AdvEstimator:
    """Looks up a registered advantage estimator.

    Args:
        name: A registered name, e.g. ``"gae"`` or ``"gae_no_norm"``.

    Returns:
        The :class:`AdvEstimator`.

    Raises:
        RegistryError: (a KeyError and a ValueError) if ``name`` is unknown; the message
            suggests the closest name and lists the known ones.
    """
    return ADV_ESTIMATOR_REGISTRY.get(name)


def list_adv_estimators() -> list[str]:
    """Returns the registered names, the bundled ones first."""
    return ADV_ESTIMATOR_REGISTRY.names()


register_adv_estimator("gae", gae_with_returns, normalize=True)
register_adv_estimator("gae_no_norm", gae_with_returns, normalize=False)
