"""Running statistics for observation normalization and reward scaling.

The statistics live in the model as buffers, so they travel with every policy file and
checkpoint: a collector normalizes with the statistics of the policy version it acts with.
They are updated only by merging summaries (count, mean, M2) of batches, the parallel form
of Welford's algorithm (Chan et al.): a collector summarizes the raw observations of a
rollout, the learner merges the summaries after its update. Merging summaries of a split
gives the statistics of the whole, so N collectors and one process agree.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

#: Added to the variance before its square root; as SB3's and CleanRL's wrappers do.
NORM_EPS = 1e-8


def summarize(x: Tensor, event_shape: Sequence[int]) -> Tensor:
    """The (count, mean, M2) summary of a batch, packed as one float64 vector.

    Args:
        x: samples ``[..., *event_shape]``; every leading dimension counts as samples.
        event_shape: the shape of one sample.

    Returns:
        float64 ``[1 + 2 * prod(event_shape)]``: count, then the mean, then M2 (the sum of
        squared deviations from the mean), each flattened.
    """
    dim = math.prod(event_shape)
    flat = x.detach().reshape(-1, dim).to(torch.float64)
    count = flat.shape[0]
    if count == 0:
        return torch.zeros(1 + 2 * dim, dtype=torch.float64, device=x.device)
    mean = flat.mean(0)
    m2 = ((flat - mean) ** 2).sum(0)
    return torch.cat([flat.new_tensor([float(count)]), mean, m2])


class RunningNorm(nn.Module):
    """Mean and variance of everything merged so far, for inputs of one ``shape``.

    Starts at count 0 (mean 0, variance 1: normalizing changes nothing). The buffers are
    float64, so millions of merges keep their precision.

    Args:
        shape: the shape of one sample (``()`` for scalars such as returns).
        clip: ``normalize`` clips its output to [-clip, clip] (None: no clipping).
    """

    # Buffers (register_buffer): declared for type checkers, which cannot see them.
    count: Tensor
    mean: Tensor
    m2: Tensor

    def __init__(self, shape: Sequence[int], clip: float | None = None) -> None:
        super().__init__()
        self.shape = tuple(int(s) for s in shape)
        self.clip = clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(self.shape, dtype=torch.float64))
        self.register_buffer("m2", torch.zeros(self.shape, dtype=torch.float64))

    @property
    def var(self) -> Tensor:
        """The population variance (1 before anything was merged)."""
        if self.count <= 0:
            return torch.ones_like(self.mean)
        return self.m2 / self.count

    @property
    def summary_size(self) -> int:
        """Length of a summary vector of this shape (see :func:`summarize`)."""
        return 1 + 2 * math.prod(self.shape)

    def summarize(self, x: Tensor) -> Tensor:
        """The summary of ``x`` (samples of this normalizer's shape)."""
        return summarize(x, self.shape)

    @torch.no_grad()
    def merge(self, summary: Tensor) -> None:
        """Adds the samples a summary describes (one vector, or rows ``[k, size]``)."""
        rows = summary.to(device=self.mean.device, dtype=torch.float64)
        rows = rows.reshape(-1, self.summary_size)
        dim = math.prod(self.shape)
        for row in rows:
            n_b = row[0]
            if n_b <= 0:
                continue
            mean_b = row[1 : 1 + dim].view(self.shape)
            m2_b = row[1 + dim :].view(self.shape)
            n_a = self.count.clone()
            total = n_a + n_b
            delta = mean_b - self.mean
            self.mean.add_(delta * (n_b / total))
            self.m2.add_(m2_b + delta**2 * (n_a * n_b / total))
            self.count.copy_(total)

    def normalize(self, x: Tensor) -> Tensor:
        """``(x - mean) / sqrt(var + eps)``, clipped, in ``x``'s dtype."""
        mean = self.mean.to(x.dtype)
        std = torch.sqrt(self.var + NORM_EPS).to(x.dtype)
        out = (x - mean) / std
        if self.clip is not None:
            out = out.clamp(-self.clip, self.clip)
        return out

    def std(self) -> float:
        """``sqrt(var + eps)`` of a scalar normalizer, as a Python float."""
        return float(torch.sqrt(self.var + NORM_EPS))

    def extra_repr(self) -> str:
        return f"shape={self.shape}, clip={self.clip}"


def first_statistics(obs_rms: RunningNorm, obs: Tensor) -> RunningNorm:
    """Statistics for a policy version that has none yet: those of the observations at
    hand, so the first rollout is normalized too (and normalization is invariant to an
    affine change of the observations from the first step on). A dimension that does not
    vary in them is only centred. The policy's own statistics stay empty until the learner
    merges the rollouts' summaries."""
    first = copy.deepcopy(obs_rms)
    first.merge(first.summarize(obs))
    first.m2.masked_fill_(first.m2 == 0, float(first.count))  # variance 1
    return first
