"""State-dependent exploration (gSDE, Raffin et al. 2021) for Box action spaces.

Instead of fresh Gaussian noise at every step, the exploration of action ``j`` is a linear
function of the actor's features ``phi(s)`` (its last hidden layer, without gradient):
``a = mu(s) + phi(s) @ (z * sigma)``, where ``sigma`` is a learned ``[features, d]`` matrix
of standard deviations and ``z`` a standard-normal matrix per env copy that is drawn again
only every ``sample_freq`` steps. Between draws the same state gets the same push, so the
exploration is smooth in time (a car that keeps pushing one way can climb a hill), and it
fades where the features are small.

Given the state, the action is Gaussian with variance ``phi(s)^2 @ sigma^2`` per action
dimension: log-probabilities, entropies and KLs are those of :class:`GaussianDist` with
that standard deviation, so the PPO update needs no noise at all.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .dists import GaussianDist

VARIANCE_FLOOR = 1e-6
"""Added to each action's variance (a row whose features are all zero would have none)."""


class SdeNoise:
    """The standard-normal exploration matrices of one model's sampling calls.

    One set ``[B, features, d]`` per batch size ``B`` (the collector's rows), drawn again
    after ``sample_freq`` samples of that size. Not part of the model's state: a restored
    or copied model draws its own.
    """

    def __init__(self, sample_freq: int) -> None:
        if sample_freq < 1:
            raise ValueError(f"sde_sample_freq must be >= 1; got {sample_freq}")
        self.sample_freq = int(sample_freq)
        self._sets: dict[int, list] = {}  # batch size -> [matrices, samples taken]

    def draw(self, batch: int, features: int, dim: int, like: Tensor) -> Tensor:
        """The matrices for a sample of ``batch`` rows, ``[batch, features, dim]``."""
        entry = self._sets.get(batch)
        if entry is None or entry[1] >= self.sample_freq:
            z = torch.randn(batch, features, dim, device=like.device, dtype=like.dtype)
            entry = self._sets[batch] = [z, 0]
        entry[1] += 1
        return entry[0]

    def reset(self) -> None:
        """Forgets every matrix: the next sample of any size draws anew."""
        self._sets.clear()


class SdeGaussianDist(GaussianDist):
    """A :class:`GaussianDist` whose samples come from the state-dependent noise.

    Args:
        mean: Means, ``[B, d]``.
        latent: The actor's features ``[B, features]`` (detached).
        sigma: Standard deviations of the exploration matrices, ``[features, d]``.
        noise: Where the standard-normal matrices come from (drawn only by :meth:`sample`).
    """

    __slots__ = ("latent", "sigma", "noise")

    def __init__(self, mean: Tensor, latent: Tensor, sigma: Tensor, noise: SdeNoise) -> None:
        variance = latent.square() @ sigma.square() + VARIANCE_FLOOR
        super().__init__(mean, 0.5 * variance.log())
        self.latent, self.sigma, self.noise = latent, sigma, noise

    def sample(self) -> Tensor:
        """Draws ``mean + latent @ (z * sigma)`` with this batch's current ``z``: ``[B, d]``."""
        batch, features = self.latent.shape
        z = self.noise.draw(batch, features, self.sigma.shape[1], self.latent)
        push = torch.einsum("bf,bfd->bd", self.latent, z * self.sigma)
        return (self.mean + push).detach()
