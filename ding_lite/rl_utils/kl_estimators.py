"""Estimators of KL(policy || reference) from the log-probabilities of sampled actions.

Both uses of a reference policy pick one by name: the KL loss term
(``policy.learn.kl_estimator``, weighted by ``kl_coef``) and the KL folded into the reward
(``policy.learn.kl_in_reward.estimator``). With ``r = logp_ref - logp`` for an action drawn
from the policy (John Schulman's notes on approximating KL, the names verl uses):

- ``k1`` (``kl``): ``-r``, unbiased, high variance, negative for some samples;
- ``abs``: ``|r|``;
- ``k2`` (``mse``): ``r**2 / 2``, biased but low variance, never negative;
- ``k3`` (``low_var_kl``): ``exp(r) - r - 1``, unbiased and never negative, clamped to
  [-10, 10] as verl does, for the rare sample where ``exp(r)`` explodes;
- ``full``: the exact KL between the two action distributions (no sample), where the
  distributions are at hand: the loss term only, the default there.

A user's estimator registers with :func:`register_kl_estimator` (``fn(logp, logp_ref) ->
per-sample estimate``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ding_lite.utils.registry import Registry

KlEstimatorFn = Callable[[Tensor, Tensor], Tensor]
KL_ESTIMATOR_REGISTRY: Registry[KlEstimatorFn] = Registry("KL estimator")
# The exact KL between the distributions: computed by the caller, which holds them.
FULL = "full"
K3_CLAMP = 10.0


def register_kl_estimator(
    name: str, fn: KlEstimatorFn | None = None, *, force: bool = False
) -> KlEstimatorFn | Callable[[KlEstimatorFn], KlEstimatorFn]:
    """Registers ``fn(logp, logp_ref) -> per-sample KL estimate`` under ``name`` (or, without
    ``fn``, decorates the function to register).

    Raises:
        RegistryError: ``name`` is taken and ``force`` is False, or ``name`` is empty.
    """
    return KL_ESTIMATOR_REGISTRY.register(name, fn, force=force)


def get_kl_estimator(name: str) -> KlEstimatorFn:
    """The estimator registered under ``name`` (``"full"``'s is a placeholder: the caller
    computes the exact KL from the distributions it holds).

    Raises:
        RegistryError: no estimator of that name (the message suggests the closest).
    """
    return KL_ESTIMATOR_REGISTRY.get(name)


def list_kl_estimators() -> list[str]:
    """The registered names, sorted."""
    return sorted(KL_ESTIMATOR_REGISTRY)


def _k1(logp: Tensor, logp_ref: Tensor) -> Tensor:
    return logp - logp_ref


def _abs(logp: Tensor, logp_ref: Tensor) -> Tensor:
    return (logp - logp_ref).abs()


def _k2(logp: Tensor, logp_ref: Tensor) -> Tensor:
    return 0.5 * (logp - logp_ref).square()


def _k3(logp: Tensor, logp_ref: Tensor) -> Tensor:
    r = logp_ref - logp
    return torch.clamp(torch.exp(r) - r - 1.0, min=-K3_CLAMP, max=K3_CLAMP)


def _full(logp: Tensor, logp_ref: Tensor) -> Tensor:
    raise ValueError("the full KL needs both action distributions, not log-probs")


for _names, _fn in (
    (("k1", "kl"), _k1),
    (("abs",), _abs),
    (("k2", "mse"), _k2),
    (("k3", "low_var_kl"), _k3),
    ((FULL,), _full),
):
    for _name in _names:
        KL_ESTIMATOR_REGISTRY.register(_name, _fn)
