"""Lightweight action distributions for the actor-critic models.

Plain tensor maths instead of ``torch.distributions``: no argument validation and no
broadcasting machinery, because these objects are built on every forward pass of the
collector and the learner. All share the :class:`ActionDist` interface, so a policy never
needs to know the action space.

Shapes below use ``B`` for the batch and ``d`` for the continuous action size. Samples are
taken without gradient; ``log_prob``, ``entropy`` and ``kl`` are differentiable.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
LOG_2 = math.log(2.0)
TANH_CLAMP_EPS = 1e-6
"""Squashed actions are clamped to [-1 + eps, 1 - eps] before ``atanh``.

That caps the recovered pre-squash value at about +-7.25, where float32 ``tanh`` has already
rounded to +-1. :meth:`HybridDist.sample` clamps the same way, so the log-probability of a
stored action is the same whether computed at collection time or in the update.
"""


class ActionDist(ABC):
    """A batch of action distributions, one per row."""

    __slots__ = ()

    @abstractmethod
    def sample(self) -> Tensor:
        """Draws one action per row (no gradient)."""

    @abstractmethod
    def mode(self) -> Tensor:
        """Returns the most likely action per row (the deterministic action)."""

    @abstractmethod
    def log_prob(self, action: Tensor) -> Tensor:
        """Returns the log-probability (density) of ``action``, shape [B]."""

    @abstractmethod
    def entropy(self) -> Tensor:
        """Returns the entropy per row, shape [B]."""

    @abstractmethod
    def kl(self, other: ActionDist) -> Tensor:
        """Returns KL(self || other) per row, shape [B]; ``other`` is of the same family."""

    def sample_with_log_prob(self) -> tuple[Tensor, Tensor]:
        """Draws actions and returns ``(action, log_prob(action))``."""
        action = self.sample()
        return action, self.log_prob(action)


def _check_same(dist: ActionDist, other: ActionDist) -> None:
    if type(other) is not type(dist):
        raise TypeError(
            f"kl needs two distributions of one family; got {type(dist).__name__} and "
            f"{type(other).__name__}"
        )


class CategoricalDist(ActionDist):
    """Categorical distributions over the last dimension of ``logits``.

    Args:
        logits: Unnormalized log-probabilities, shape [..., n] (usually [B, n]); ``-inf``
            masks a choice out. Actions are int64 of shape [...].
    """

    __slots__ = ("logits", "_probs")

    def __init__(self, logits: Tensor) -> None:
        self.logits = torch.log_softmax(logits, -1)
        self._probs: Tensor | None = None

    @property
    def probs(self) -> Tensor:
        """Probabilities, shape [..., n]."""
        if self._probs is None:
            self._probs = self.logits.exp()
        return self._probs

    def _finite_logits(self) -> Tensor:
        # Masked (-inf) entries would give 0 * -inf = nan in the sums below.
        return self.logits.clamp(min=torch.finfo(self.logits.dtype).min)

    def sample(self) -> Tensor:
        """Draws int64 actions of shape [...]."""
        # Exponential race: argmax_i p_i / E_i with E_i ~ Exp(1) picks i with probability
        # p_i (the Gumbel-max trick without the logs), faster than torch.multinomial.
        probs = self.probs.detach()
        race = torch.empty_like(probs).exponential_().clamp_(min=torch.finfo(probs.dtype).tiny)
        return (probs / race).argmax(-1)

    def mode(self) -> Tensor:
        """Returns the most likely choice, int64 of shape [...]."""
        return self.logits.argmax(-1)

    def log_prob(self, action: Tensor) -> Tensor:
        """Log-probability of integer ``action`` of shape [...] (any int or float dtype)."""
        return self.logits.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> Tensor:
        """Entropy, shape [...]."""
        return -(self.probs * self._finite_logits()).sum(-1)

    def kl(self, other: ActionDist) -> Tensor:
        """KL(self || other), shape [...]."""
        _check_same(self, other)
        assert isinstance(other, CategoricalDist)
        diff = self._finite_logits() - other._finite_logits()
        return (self.probs * diff).sum(-1)


class MultiCategoricalDist(ActionDist):
    """Independent categorical parts (a :class:`~ding_lite.envs.spaces.MultiDiscrete`
    action); log-probabilities, entropies and KLs sum over the parts.

    Args:
        logits: Logits [B, k, n_max], with choices a part lacks set to -inf (see
            :func:`pad_logits`). Actions are int64 [B, k], column ``j`` part ``j``'s choice.
    """

    __slots__ = ("cat",)

    def __init__(self, logits: Tensor) -> None:
        self.cat = CategoricalDist(logits)

    def sample(self) -> Tensor:
        """Draws int64 actions [B, k]."""
        return self.cat.sample()

    def mode(self) -> Tensor:
        """Returns each part's most likely choice, int64 [B, k]."""
        return self.cat.mode()

    def log_prob(self, action: Tensor) -> Tensor:
        """Log-probability of ``action`` [B, k] (any int or float dtype): shape [B]."""
        return self.cat.log_prob(action).sum(-1)

    def entropy(self) -> Tensor:
        """Sum of the parts' entropies, shape [B]."""
        return self.cat.entropy().sum(-1)

    def kl(self, other: ActionDist) -> Tensor:
        """KL(self || other), summed over the parts: shape [B]."""
        _check_same(self, other)
        assert isinstance(other, MultiCategoricalDist)
        return self.cat.kl(other.cat).sum(-1)


class GaussianDist(ActionDist):
    """Diagonal Gaussian distributions; the log-probability sums over action dimensions.

    Args:
        mean: Means, shape [B, d].
        log_std: Log standard deviations, shape [B, d] or [d] (shared by all rows).
    """

    __slots__ = ("mean", "log_std", "_std")

    def __init__(self, mean: Tensor, log_std: Tensor) -> None:
        self.mean = mean
        self.log_std = log_std
        self._std: Tensor | None = None

    @property
    def std(self) -> Tensor:
        """Standard deviations, shape of ``log_std``."""
        if self._std is None:
            self._std = self.log_std.exp()
        return self._std

    def sample(self) -> Tensor:
        """Draws float actions of shape [B, d] (unbounded)."""
        noise = torch.randn_like(self.mean)
        return torch.addcmul(self.mean, self.std, noise).detach()

    def mode(self) -> Tensor:
        """Returns the mean, shape [B, d]."""
        return self.mean

    def log_prob(self, action: Tensor) -> Tensor:
        """Log-density of ``action`` [B, d], summed over ``d``: shape [B]."""
        z = (action - self.mean) / self.std
        return -(0.5 * z.square() + self.log_std + HALF_LOG_2PI).sum(-1)

    def entropy(self) -> Tensor:
        """Entropy, shape [B]."""
        ent = (self.log_std + (0.5 + HALF_LOG_2PI)).sum(-1)
        return ent.expand(self.mean.shape[:-1])

    def kl(self, other: ActionDist) -> Tensor:
        """KL(self || other), summed over ``d``: shape [B]."""
        _check_same(self, other)
        assert isinstance(other, GaussianDist)
        var_ratio = (self.std / other.std).square()
        t = ((self.mean - other.mean) / other.std).square()
        return (0.5 * (var_ratio + t - 1.0 - var_ratio.log())).sum(-1)


class ActionBounds(NamedTuple):
    """The affine map from the tanh range (-1, 1) onto a Box: ``a = loc + scale * y``.

    Attributes:
        loc: Centre of the box, shape [d].
        scale: Half-width of the box, shape [d].
        log_scale: ``scale.log().sum()``, a 0-dim tensor (the map's log-Jacobian).
    """

    loc: Tensor
    scale: Tensor
    log_scale: Tensor

    @classmethod
    def from_low_high(cls, low: Tensor, high: Tensor) -> ActionBounds:
        """Builds the map onto [low, high] (both shape [d], finite, low < high)."""
        scale = (high - low) * 0.5
        return cls((high + low) * 0.5, scale, scale.log().sum())


def pad_logits(parts: Sequence[Tensor]) -> Tensor:
    """Stacks per-part logits [B, n_i] into one [B, k, max(n_i)] tensor, padding with -inf."""
    n_max = max(p.shape[-1] for p in parts)
    return torch.stack([F.pad(p, (0, n_max - p.shape[-1]), value=-math.inf) for p in parts], -2)


class HybridDist(ActionDist):
    """A tanh-squashed Gaussian continuous part followed by independent categorical parts.

    Actions follow the :class:`~ding_lite.envs.spaces.Hybrid` encoding: one float tensor
    [B, d + k] whose first ``d`` columns are the (squashed, optionally rescaled) continuous
    action and whose last ``k`` columns are the discrete choices stored as floats.

    The continuous part samples ``u ~ N(mean, std)`` and returns ``y = tanh(u)`` in (-1, 1)
    (mapped onto the box by ``bounds`` if given). Its log-density includes the tanh Jacobian
    ``log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))`` and the box's ``log_scale``.
    ``log_prob`` recovers ``u`` with ``atanh`` of the action clamped to
    [-1 + TANH_CLAMP_EPS, 1 - TANH_CLAMP_EPS].

    Args:
        mean: Pre-squash means, shape [B, d].
        log_std: Pre-squash log standard deviations, shape [B, d] or [d].
        logits: Logits of the discrete parts, [B, k, n_max], with choices a part lacks set
            to -inf (see :func:`pad_logits`); None if there are no discrete parts.
        bounds: Affine map from (-1, 1) onto the action box, or None to keep (-1, 1).
    """

    __slots__ = ("gauss", "cat", "bounds")

    def __init__(
        self,
        mean: Tensor,
        log_std: Tensor,
        logits: Tensor | None,
        bounds: ActionBounds | None = None,
    ) -> None:
        self.gauss = GaussianDist(mean, log_std)
        self.cat = CategoricalDist(logits) if logits is not None else None
        self.bounds = bounds

    def _join(self, cont: Tensor, disc: Tensor | None) -> Tensor:
        if self.bounds is not None:
            cont = torch.addcmul(self.bounds.loc, self.bounds.scale, cont)
        if disc is None:
            return cont
        return torch.cat((cont, disc.to(cont.dtype)), -1)

    def sample(self) -> Tensor:
        """Draws float actions [B, d + k]; continuous part clamped inside the box."""
        y = torch.tanh(self.gauss.sample()).clamp_(-1.0 + TANH_CLAMP_EPS, 1.0 - TANH_CLAMP_EPS)
        return self._join(y, self.cat.sample() if self.cat is not None else None)

    def mode(self) -> Tensor:
        """Returns ``tanh(mean)`` (rescaled) and the most likely choices, [B, d + k]."""
        y = torch.tanh(self.gauss.mean)
        return self._join(y, self.cat.mode() if self.cat is not None else None)

    def log_prob(self, action: Tensor) -> Tensor:
        """Log-density of ``action`` [B, d + k]: shape [B]."""
        mean = self.gauss.mean
        d = mean.shape[-1]
        y = action[..., :d]
        if self.bounds is not None:
            y = (y - self.bounds.loc) / self.bounds.scale
        u = torch.atanh(y.clamp(-1.0 + TANH_CLAMP_EPS, 1.0 - TANH_CLAMP_EPS))
        z = (u - mean) / self.gauss.std
        log_det = 2.0 * (LOG_2 - u - F.softplus(-2.0 * u))
        logp = -(0.5 * z.square() + self.gauss.log_std + HALF_LOG_2PI + log_det).sum(-1)
        if self.bounds is not None:
            logp = logp - self.bounds.log_scale
        if self.cat is not None:
            logp = logp + self.cat.log_prob(action[..., d:]).sum(-1)
        return logp

    def entropy(self) -> Tensor:
        """Pre-squash Gaussian entropy plus the categorical entropies, shape [B].

        An approximation: the squashed distribution has no closed-form entropy. This drops
        the tanh term ``E[log(1 - tanh(u)^2)] <= 0`` and the constant box ``log_scale``; it
        still grows with ``log_std``, which is what an entropy bonus needs.
        """
        ent = self.gauss.entropy()
        if self.cat is not None:
            ent = ent + self.cat.entropy().sum(-1)
        return ent

    def kl(self, other: ActionDist) -> Tensor:
        """Pre-squash Gaussian KL plus the categorical KLs, shape [B].

        Exact up to the action clamp: KL is unchanged by the tanh and affine maps, which
        both distributions share.
        """
        _check_same(self, other)
        assert isinstance(other, HybridDist)
        kl = self.gauss.kl(other.gauss)
        if self.cat is not None and other.cat is not None:
            kl = kl + self.cat.kl(other.cat).sum(-1)
        return kl
