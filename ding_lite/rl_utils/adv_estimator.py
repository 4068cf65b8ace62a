"""A registry of advantage estimators, so configs can name one (``adv_estimator: gae``).

An estimator is a function with the signature of :func:`~ding_lite.rl_utils.gae.gae`
returning ``(advantages, returns)``, plus a flag telling the PPO update whether to
normalize advantages per minibatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from .gae import gae_with_returns

AdvFn = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, float, float], tuple[Tensor, Tensor]]
"""``fn(rewards, values, next_values, terminated, dones, gamma, lam) -> (adv, returns)``."""


class UnknownAdvEstimatorError(KeyError, ValueError):
    """Raised for an unregistered estimator name; catchable as KeyError or ValueError."""

    def __str__(self) -> str:
        # KeyError.__str__ would print the message with quotes around it.
        return str(self.args[0]) if self.args else ""


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


_REGISTRY: dict[str, AdvEstimator] = {}


def register_adv_estimator(
    name: str, fn: AdvFn, normalize: bool, *, force: bool = False
) -> AdvEstimator:
    """Registers an advantage estimator under ``name``.

    Args:
        name: Name used in configs; a non-empty string.
        fn: The estimator; see :data:`AdvFn`.
        normalize: Whether the PPO update normalizes this estimator's advantages per
            minibatch.
        force: Replace an estimator already registered under ``name`` instead of raising.

    Returns:
        The registered :class:`AdvEstimator`.

    Raises:
        ValueError: If ``name`` is taken and ``force`` is False, ``name`` is empty, or
            ``fn`` is not callable.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"advantage estimator name must be a non-empty string; got {name!r}")
    if not callable(fn):
        raise ValueError(f"advantage estimator {name!r}: fn must be callable; got {fn!r}")
    if name in _REGISTRY and not force:
        raise ValueError(
            f"advantage estimator {name!r} is already registered; pick another name or "
            "pass force=True to replace it"
        )
    estimator = AdvEstimator(name=name, fn=fn, normalize=bool(normalize))
    _REGISTRY[name] = estimator
    return estimator


def get_adv_estimator(name: str) -> AdvEstimator:
    """Looks up a registered advantage estimator.

    Args:
        name: A registered name, e.g. ``"gae"`` or ``"gae_no_norm"``.

    Returns:
        The :class:`AdvEstimator`.

    Raises:
        UnknownAdvEstimatorError: (a KeyError and a ValueError) if ``name`` is unknown; the
            message lists the known names.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownAdvEstimatorError(
            f"unknown advantage estimator {name!r}; known: {', '.join(list_adv_estimators())}"
        ) from None


def list_adv_estimators() -> list[str]:
    """Returns the registered names, sorted."""
    return sorted(_REGISTRY)


register_adv_estimator("gae", gae_with_returns, normalize=True)
register_adv_estimator("gae_no_norm", gae_with_returns, normalize=False)
