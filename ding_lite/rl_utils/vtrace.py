"""V-trace (Espeholt et al., 2018) in its advantage form, for rollouts a policy version or
more older than the policy being updated.

Each step's TD error is weighted by the truncated importance ratio of the target policy
(the learner's, as the update starts) over the behaviour policy that collected the step,
and the backward recursion is cut by the truncated ratio too::

    rho_t   = min(rho_max, exp(log_rho_t))        c_t = min(c_max, exp(log_rho_t))
    delta_t = rho_t * (r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t))
    A_t     = delta_t + gamma * lam * c_t * (1 - done_t) * A_{t+1}

The value target is ``A_t + V(s_t)``, the V-trace target. With ``log_rho = 0`` (behaviour
and target policy the same) every weight is exactly 1 and the result is GAE(gamma, lam),
bit for bit.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .gae import backward_sums, check_one_shape


def vtrace(
    rewards: Tensor,
    values: Tensor,
    next_values: Tensor,
    terminated: Tensor,
    dones: Tensor,
    gamma: float,
    lam: float,
    *,
    log_rho: Tensor,
    rho_max: float = 1.0,
    c_max: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """V-trace advantages and value targets over a rollout, vectorized over env copies.

    Args:
        rewards: Rewards, [T, B].
        values: V(s_t) of the observations the actions were taken in, [T, B].
        next_values: V(s_{t+1}), the final observation's value where an episode ended
            (as :func:`~ding_lite.rl_utils.gae.gae`), [T, B].
        terminated: Where a terminal state was reached (zeroes the bootstrap), [T, B].
        dones: Where an episode ended for any reason (stops the recursion), [T, B].
        gamma: Discount factor.
        lam: Lambda of the traces (1: the plain V-trace of the paper, whose traces
            carry ``lam`` inside ``c``).
        log_rho: ``log pi(a_t | s_t) - log mu(a_t | s_t)``: the target policy's log-prob
            of each action over the behaviour policy's, [T, B].
        rho_max: Truncation of the weight of each TD error (the paper's rho bar).
        c_max: Truncation of the traces (the paper's c bar).

    Returns:
        ``(advantages, returns)``, both [T, B], ``returns = advantages + values``.

    Raises:
        ValueError: The tensors differ in shape, or a truncation is not positive.
    """
    check_one_shape("vtrace", rewards, values, next_values, terminated, dones, log_rho)
    if not (rho_max > 0 and c_max > 0):
        raise ValueError(f"vtrace: rho_max and c_max must be > 0; got {rho_max}, {c_max}")
    dtype = values.dtype
    ratio = log_rho.to(dtype).exp()
    rho = torch.clamp(ratio, max=rho_max)
    c = torch.clamp(ratio, max=c_max)
    not_terminated = 1.0 - terminated.to(dtype)
    # The same operations as GAE's, each then weighted: x * 1.0 is x, so with log_rho = 0
    # this is GAE bit for bit.
    deltas = (rewards.to(dtype) + gamma * next_values * not_terminated - values) * rho
    carry = (gamma * lam) * (1.0 - dones.to(dtype)) * c
    advantages = backward_sums(deltas, carry)
    return advantages, advantages + values
