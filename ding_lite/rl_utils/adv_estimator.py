"""A registry of advantage estimators, so configs can name one (``adv_estimator: gae``).

Three kinds:

- *step-level* (GAE): a function with the signature of :func:`~ding_lite.rl_utils.gae.gae`
  over a rollout's [T, B] tensors, returning ``(advantages, returns)``;
- *off-policy step-level* (``off_policy=True``; V-trace, :mod:`~ding_lite.rl_utils.vtrace`):
  the same, and also the keywords ``log_rho`` (the learner's log-probs over the behaviour
  policy's, [T, B]), ``rho_max`` and ``c_max``;
- *episode-level* (``episodic=True``; REINFORCE++, GRPO, RLOO, see
  :mod:`~ding_lite.rl_utils.critic_free`): a function over whole episodes laid end to end,
  which also receives each step's group key.

Each carries a flag telling the PPO update whether to normalize advantages per minibatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from ding_lite.utils.registry import Registry

from .critic_free import grpo, reinforce_pp, remax, rloo
from .gae import gae_with_returns
from .vtrace import vtrace

AdvFn = Callable[..., tuple[Tensor, Tensor]]
"""``fn(rewards, values, next_values, terminated, dones, gamma, lam) -> (adv, returns)``, with
``log_rho``, ``rho_max`` and ``c_max`` by keyword for an off-policy one; an episode-level one
is ``fn(rewards, dones, groups, gamma, *, norm_by_std)`` (see :class:`AdvEstimator`). One
callable type holds the three forms, so its arguments are not checked here."""


@dataclass(frozen=True)
class AdvEstimator:
    """A registered advantage estimator.

    Attributes:
        name: The name it is registered under.
        fn: Step-level: ``fn(rewards, values, next_values, terminated, dones, gamma, lam)``
            taking [T, B] tensors and returning ``(advantages, returns)``, both [T, B].
            Episode-level: ``fn(rewards, dones, groups, gamma, *, norm_by_std)`` over whole
            episodes end to end (see :data:`~ding_lite.rl_utils.critic_free.EpisodicFn`).
        normalize: Whether the PPO update normalizes advantages per minibatch.
        episodic: An episode-level estimator: advantages are computed once an episode (and
            its group) is complete, and no value network is needed.
        grouped: It compares the episodes of a group, so it needs ``env.reset_group_size``
            above 1 (GRPO, RLOO).
        off_policy: A step-level estimator that also takes ``log_rho``, the log importance
            ratio of the learner's policy (as the update starts) over the behaviour
            policy, and ``rho_max`` / ``c_max`` (V-trace).
        greedy_baseline: A grouped estimator whose baseline is a greedy episode (ReMax):
            the first env copy of each reset group acts with the policy's most likely
            actions, ``fn`` also takes ``greedy`` (bool per step), and those steps are
            not trained on.
    """

    name: str
    fn: AdvFn
    normalize: bool
    episodic: bool = False
    grouped: bool = False
    off_policy: bool = False
    greedy_baseline: bool = False


ADV_ESTIMATOR_REGISTRY: Registry[AdvEstimator] = Registry("advantage estimator")


def register_adv_estimator(
    name: str,
    fn: AdvFn | None = None,
    normalize: bool = True,
    *,
    force: bool = False,
    episodic: bool = False,
    grouped: bool = False,
    off_policy: bool = False,
    greedy_baseline: bool = False,
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
        episodic: ``fn`` is episode-level (see :class:`AdvEstimator`).
        grouped: ``fn`` compares the episodes of a group (implies ``episodic``).
        off_policy: ``fn`` is step-level and takes ``log_rho``, ``rho_max`` and ``c_max``
            (see :class:`AdvEstimator`).
        greedy_baseline: ``fn`` compares each group's episodes with its greedy one and
            takes ``greedy`` (implies ``grouped``; see :class:`AdvEstimator`).

    Returns:
        The registered :class:`AdvEstimator`; the decorator form returns the decorated
        function itself, so it stays callable as written.

    Raises:
        RegistryError: If ``name`` is taken and ``force`` is False, or ``name`` is empty
            (a ``KeyError`` and a ``ValueError``, as every ding_lite registry raises).
        TypeError: If ``fn`` is not callable.
        ValueError: If ``off_policy`` is given with ``episodic`` or ``grouped``.
    """
    if off_policy and (episodic or grouped or greedy_baseline):
        raise ValueError(f"advantage estimator {name!r}: off_policy is for step-level ones")

    def add(fn: AdvFn) -> AdvEstimator:
        if not callable(fn):
            raise TypeError(f"advantage estimator {name!r}: fn must be callable; got {fn!r}")
        estimator = AdvEstimator(
            name=name,
            fn=fn,
            normalize=bool(normalize),
            episodic=bool(episodic or grouped or greedy_baseline),
            grouped=bool(grouped or greedy_baseline),
            off_policy=bool(off_policy),
            greedy_baseline=bool(greedy_baseline),
        )
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
        name: A registered name, e.g. ``"gae"``, ``"gae_no_norm"``, ``"vtrace"``,
            ``"reinforce_pp"``, ``"grpo"``, ``"rloo"`` or ``"remax"``.

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
register_adv_estimator("vtrace", vtrace, normalize=True, off_policy=True)
register_adv_estimator("reinforce_pp", reinforce_pp, normalize=False, episodic=True)
register_adv_estimator("grpo", grpo, normalize=False, grouped=True)
register_adv_estimator("rloo", rloo, normalize=False, grouped=True)
register_adv_estimator("remax", remax, normalize=False, greedy_baseline=True)
