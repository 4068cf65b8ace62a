"""The policy head of :class:`~ding_lite.model.actor_critic.ActorCritic`: its width and
its distribution, by action space."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..envs.spaces import ActionSpace, Box, Discrete, Hybrid, MultiDiscrete
from .dists import (
    ActionBounds,
    ActionDist,
    CategoricalDist,
    GaussianDist,
    HybridDist,
    MultiCategoricalDist,
)
from .sde import SdeGaussianDist, SdeNoise

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
"""Range that state-dependent log-std heads are clamped to."""
HYBRID_MEAN_BOUND = 5.0
"""Pre-squash means of a Hybrid space's Gaussian are softly bounded to +-this
(``b * tanh(x / b)``). ``tanh(5)`` is 0.99991, full deflection for any purpose, while an
unbounded mean drifts far past the +-7.25 that a float32 squashed action can still encode:
the log-probability of a stored action then no longer matches the one it was sampled with,
and PPO's ratio overflows."""


class PolicyHead(nn.Module):
    """Plans the policy head for an action space (:meth:`_plan_heads`) and turns its
    output into a distribution (:meth:`_dist`); a base of the actor-critic models.

    Subclasses set ``policy_head`` (an ``nn.Linear`` as wide as :meth:`_plan_heads` says)
    and ``log_std`` (a parameter for a ``Box`` space with a state-independent log-std, else
    None), and call :meth:`_plan_sde`.
    """

    policy_head: nn.Linear
    log_std: nn.Parameter | None
    sde_log_std: nn.Parameter | None
    sde_noise: SdeNoise | None
    # Buffers (register_buffer), declared for type checkers: the discrete parts' mask and
    # a Hybrid space's bounds.
    logits_mask: Tensor | None
    action_loc: Tensor
    action_scale: Tensor
    action_log_scale: Tensor

    def _plan_sde(
        self, sde: bool, sample_freq: int, features: int, log_std_init: float, dependent: bool
    ) -> None:
        """Sets ``sde_log_std`` (``[features, d]``) and the noise for state-dependent
        exploration, or None without ``sde``."""
        self.sde_log_std = None
        self.sde_noise = None
        if not sde:
            return
        if self._kind != "box":
            raise ValueError("sde (state-dependent exploration) needs a Box action space")
        if dependent:
            raise ValueError("sde and state_dependent_std exclude each other")
        shape = (features, self._act_dim)
        self.sde_log_std = nn.Parameter(torch.full(shape, float(log_std_init)))
        self.sde_noise = SdeNoise(sample_freq)

    def _plan_heads(
        self, space: ActionSpace, state_dependent_std: bool
    ) -> tuple[str, int, slice | None]:
        """Sets the head bookkeeping; returns (kind, head width, log-std columns)."""
        self._act_dim = 0
        self._n_parts = 0
        self._n_max = 0
        self._bounded = False
        self.register_buffer("logits_mask", None)
        if isinstance(space, Discrete):
            if space.n < 1:
                raise ValueError(f"Discrete action space needs n >= 1; got {space.n}")
            return "discrete", space.n, None
        if isinstance(space, Box):
            d = self._act_dim = space.dim
            if d < 1:
                raise ValueError("Box action space has no dimensions")
            if state_dependent_std:
                return "box", 2 * d, slice(d, 2 * d)
            return "box", d, None
        if isinstance(space, Hybrid):
            d = self._act_dim = space.continuous.dim
            if d < 1:
                raise ValueError("Hybrid action space needs a continuous part with dim >= 1")
            low = torch.tensor(space.continuous.low, dtype=torch.float32)
            high = torch.tensor(space.continuous.high, dtype=torch.float32)
            if not (
                torch.isfinite(low).all() and torch.isfinite(high).all() and (low < high).all()
            ):
                raise ValueError(
                    "Hybrid continuous bounds must be finite with low < high to squash onto; "
                    f"got low={space.continuous.low}, high={space.continuous.high}"
                )
            bounds = ActionBounds.from_low_high(low, high)
            self._bounded = not (bool((low == -1).all()) and bool((high == 1).all()))
            self.register_buffer("action_loc", bounds.loc)
            self.register_buffer("action_scale", bounds.scale)
            self.register_buffer("action_log_scale", bounds.log_scale)
            parts = tuple(int(n) for n in space.discrete)
            if any(n < 1 for n in parts):
                raise ValueError(f"Hybrid discrete parts need >= 1 choice each; got {parts}")
            self._plan_parts(parts)
            return "hybrid", 2 * d + self._n_parts * self._n_max, slice(d, 2 * d)
        if isinstance(space, MultiDiscrete):
            self._plan_parts(tuple(int(n) for n in space.nvec))
            return "multi_discrete", self._n_parts * self._n_max, None
        raise ValueError(
            f"unsupported action space {type(space).__name__}; supported: Discrete, Box, "
            "Hybrid, MultiDiscrete"
        )

    def _plan_parts(self, parts: tuple[int, ...]) -> None:
        """Sets up ``k`` discrete parts whose logits are padded to the largest part."""
        self._n_parts = len(parts)
        self._n_max = max(parts, default=0)
        if len(set(parts)) > 1:
            mask = torch.zeros(len(parts), self._n_max)
            for i, n in enumerate(parts):
                mask[i, n:] = -math.inf
            self.logits_mask = mask

    def _part_logits(self, out: Tensor) -> Tensor:
        """Logits [B, k, n_max] of the discrete parts from their head columns [B, k * n_max]."""
        logits = out.unflatten(-1, (self._n_parts, self._n_max))
        return logits if self.logits_mask is None else logits + self.logits_mask

    def _dist(self, h_pi: Tensor) -> ActionDist:
        head = self.policy_head
        out = F.linear(h_pi, head.weight, head.bias)
        if self._kind == "discrete":
            return CategoricalDist(out)
        if self._kind == "multi_discrete":
            return MultiCategoricalDist(self._part_logits(out))
        d = self._act_dim
        if self._kind == "box":
            if self.sde_log_std is not None and self.sde_noise is not None:
                sigma = self.sde_log_std.exp()
                return SdeGaussianDist(out, h_pi.detach(), sigma, self.sde_noise)
            if self.log_std is not None:
                return GaussianDist(out, self.log_std)
            log_std = out[:, d:].clamp(LOG_STD_MIN, LOG_STD_MAX)
            return GaussianDist(out[:, :d], log_std)
        log_std = out[:, d : 2 * d].clamp(LOG_STD_MIN, LOG_STD_MAX)
        logits = self._part_logits(out[:, 2 * d :]) if self._n_parts else None
        bounds = None
        if self._bounded:
            bounds = ActionBounds(self.action_loc, self.action_scale, self.action_log_scale)
        mean = torch.tanh(out[:, :d] * (1.0 / HYBRID_MEAN_BOUND)) * HYBRID_MEAN_BOUND
        return HybridDist(mean, log_std, logits, bounds)
