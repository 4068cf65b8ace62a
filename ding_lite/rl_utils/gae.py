"""Generalized Advantage Estimation (Schulman et al., 2016) as a pure tensor function.

Terminated and truncated episode ends are treated differently: a terminated step has no
future value (the bootstrap is zeroed), while a truncated step still bootstraps from the
value of its final observation. Both stop the backward recursion, because the next row of
the rollout belongs to a new episode.
"""

from __future__ import annotations

import torch
from torch import Tensor


def gae(
    rewards: Tensor,
    values: Tensor,
    next_values: Tensor,
    terminated: Tensor,
    dones: Tensor,
    gamma: float,
    lam: float,
) -> Tensor:
    """Computes GAE(gamma, lambda) advantages over a rollout, vectorized over env copies.

    For every step ``t``::

        delta_t = r_t + gamma * next_values_t * (1 - terminated_t) - values_t
        A_t = delta_t + gamma * lam * (1 - dones_t) * A_{t+1}

    with ``A_T = 0`` past the end of the rollout: the last row's bootstrap comes only through
    ``next_values[T - 1]``. The returns (value targets) are ``advantages + values``; see
    :func:`gae_with_returns`.

    Args:
        rewards: Rewards r_t, shape [T, B].
        values: V(s_t) of the observations the actions were taken in, shape [T, B].
        next_values: V(s_{t+1}), shape [T, B]. For a copy whose episode ended at ``t``,
            ``s_{t+1}`` is that episode's final observation (not the reset one), so a
            truncated episode bootstraps from where it stopped.
        terminated: True (or 1.0) where the episode reached a terminal state at ``t``;
            zeroes the bootstrap. Shape [T, B], bool or float.
        dones: True (or 1.0) where the episode ended at ``t`` for any reason (terminated
            or truncated); stops the recursion. Shape [T, B], bool or float.
        gamma: Discount factor.
        lam: GAE lambda; 0 gives one-step TD errors, 1 gives Monte Carlo minus baseline.

    Returns:
        Advantages, shape [T, B], dtype of ``values``. Differentiable through its inputs,
        though callers normally pass detached tensors.
    """
    check_one_shape("gae", rewards, values, next_values, terminated, dones)
    dtype = values.dtype
    not_terminated = 1.0 - terminated.to(dtype)
    # Everything but the recursion is elementwise, so it is done for all T at once.
    deltas = rewards.to(dtype) + gamma * next_values * not_terminated - values
    carry = (gamma * lam) * (1.0 - dones.to(dtype))
    return backward_sums(deltas, carry)


def check_one_shape(fn: str, *tensors: Tensor) -> None:
    """Raises ValueError, naming the shapes, unless every [T, B] input of ``fn`` (rewards,
    values, next_values, terminated, dones, then any others) has one shape."""
    if len({t.shape for t in tensors}) != 1:
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        raise ValueError(
            f"{fn} expects rewards, values, next_values, terminated, dones (and the rest) of "
            f"one shape [T, B]; got {shapes}"
        )


def backward_sums(deltas: Tensor, carry: Tensor) -> Tensor:
    """``A_t = deltas_t + carry_t * A_{t+1}`` from the last step back, ``A_T = 0``; [T, B]."""
    advantages = torch.empty_like(deltas)
    last = deltas.new_zeros(deltas.shape[1:])
    for t in range(deltas.shape[0] - 1, -1, -1):
        last = torch.addcmul(deltas[t], carry[t], last)
        advantages[t] = last
    return advantages


def gae_with_returns(
    rewards: Tensor,
    values: Tensor,
    next_values: Tensor,
    terminated: Tensor,
    dones: Tensor,
    gamma: float,
    lam: float,
) -> tuple[Tensor, Tensor]:
    """Runs :func:`gae` and also returns the value targets.

    Args:
        rewards: Shape [T, B]; see :func:`gae`.
        values: Shape [T, B].
        next_values: Shape [T, B].
        terminated: Shape [T, B], bool or float.
        dones: Shape [T, B], bool or float.
        gamma: Discount factor.
        lam: GAE lambda.

    Returns:
        ``(advantages, returns)``, both [T, B], where ``returns = advantages + values``
        (the TD(lambda) return, the critic's regression target).
    """
    advantages = gae(rewards, values, next_values, terminated, dones, gamma, lam)
    return advantages, advantages + values
