"""A trained policy as one self-contained graph: the raw observation in, the env's action out.

:class:`PolicyGraph` is what ``ding-lite export`` traces to ONNX or TorchScript. It folds in
everything :meth:`~ding_lite.entry.trained.predict.TrainedPolicy.predict` does around the
network, so that a deployment needs nothing but the file:

- the run's observation normalization, its running mean and standard deviation frozen as
  constants, and the clip;
- the recurrent state as an explicit input and output, zeroed for the rows whose episode
  starts (an explicit ``episode_start`` input);
- the deterministic action (each distribution's mode), or with ``sampling`` a sample drawn
  from an explicit standard-normal ``noise`` input (ONNX has no portable random ops);
- a Box action clipped to the space's bounds, as ``predict`` clips it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ding_lite.envs.spaces import ActionSpace, Box, Discrete, Hybrid, MultiDiscrete
from ding_lite.model.actor_critic import ActorCritic
from ding_lite.model.dists import (
    TANH_CLAMP_EPS,
    ActionDist,
    CategoricalDist,
    GaussianDist,
    HybridDist,
    MultiCategoricalDist,
)
from ding_lite.model.normalizer import NORM_EPS

BATCH = "batch"
"""The name of the graph's dynamic batch dimension."""
UNIFORM_EPS = 2.0**-24
"""A uniform drawn from the noise is kept inside [eps, 1 - eps], so its Gumbel is finite."""


class TensorSpec(NamedTuple):
    """One input or output of an exported graph.

    Attributes:
        name: its name in the ONNX file (TorchScript takes and returns them in this order).
        dtype: ``float32``, ``int64`` or ``bool``.
        shape: sizes, ``"batch"`` for the dynamic batch dimension.
    """

    name: str
    dtype: str
    shape: tuple[int | str, ...]

    def __str__(self) -> str:
        return f"{self.name} {self.dtype} [{', '.join(str(s) for s in self.shape)}]"


def noise_size(space: ActionSpace) -> int:
    """Columns of a sampling graph's ``noise`` input: ``d`` for a Box, ``n`` for a
    Discrete, ``k * max(n_i)`` for a MultiDiscrete, ``d + k * max(n_i)`` for a Hybrid."""
    if isinstance(space, Discrete):
        return space.n
    if isinstance(space, Box):
        return space.dim
    if isinstance(space, MultiDiscrete):
        return len(space.nvec) * max(space.nvec)
    if isinstance(space, Hybrid):
        parts = space.discrete
        return space.continuous.dim + len(parts) * max(parts, default=0)
    raise ValueError(f"unsupported action space {type(space).__name__}")


def action_spec(space: ActionSpace) -> TensorSpec:
    """The ``action`` output: as ``predict`` returns a batch of actions."""
    if isinstance(space, Discrete):
        return TensorSpec("action", "int64", (BATCH,))
    if isinstance(space, MultiDiscrete):
        return TensorSpec("action", "int64", (BATCH, space.dim))
    return TensorSpec("action", "float32", (BATCH, space.dim))


def _gumbel(noise: Tensor) -> Tensor:
    """Standard Gumbel variables from standard-normal ones (through their uniform CDF)."""
    uniform = 0.5 * (1.0 + torch.erf(noise * (1.0 / math.sqrt(2.0))))
    uniform = uniform.clamp(UNIFORM_EPS, 1.0 - UNIFORM_EPS)
    return -torch.log(-torch.log(uniform))


def _gumbel_max(logits: Tensor, noise: Tensor) -> Tensor:
    """A categorical sample per row of ``logits`` ``[..., n]`` (the Gumbel-max trick)."""
    # -1 for the batch: a traced size would be frozen at the tracing batch.
    return (logits + _gumbel(noise.reshape(-1, *logits.shape[1:]))).argmax(-1)


def sample_with_noise(dist: ActionDist, noise: Tensor) -> Tensor:
    """A sample of ``dist`` whose randomness is ``noise`` (standard normal, ``[B,
    noise_size]``, laid out as :func:`noise_size` says): the Gaussian's ``mean + std * z``,
    and each categorical part by the Gumbel-max trick on the uniforms ``Phi(z)``.

    A gSDE policy (``policy.model.sde``) samples its per-state Gaussian this way too, with
    fresh noise each call: the same distribution per step as in training, without the
    exploration matrix held over ``sde_sample_freq`` steps.
    """
    if isinstance(dist, CategoricalDist):
        return _gumbel_max(dist.logits, noise)
    if isinstance(dist, MultiCategoricalDist):
        return _gumbel_max(dist.cat.logits, noise)
    if isinstance(dist, HybridDist):
        gauss = dist.gauss
        d = gauss.mean.shape[-1]
        u = gauss.mean + gauss.std * noise[:, :d]
        cont = torch.tanh(u).clamp(-1.0 + TANH_CLAMP_EPS, 1.0 - TANH_CLAMP_EPS)
        if dist.bounds is not None:
            cont = dist.bounds.loc + dist.bounds.scale * cont
        if dist.cat is None:
            return cont
        disc = _gumbel_max(dist.cat.logits, noise[:, d:])
        return torch.cat((cont, disc.to(cont.dtype)), -1)
    if isinstance(dist, GaussianDist):
        return dist.mean + dist.std * noise
    raise TypeError(f"cannot sample {type(dist).__name__} from explicit noise")


class PolicyGraph(nn.Module):
    """A trained model wrapped for export: ``forward(obs[, state, episode_start][, noise])``.

    Inputs, in order (see :attr:`inputs`): ``obs`` float32 ``[batch, *obs_shape]``, raw as
    the env returns it; for a recurrent policy ``state`` float32 ``[batch, state_size]``
    and ``episode_start`` bool ``[batch]``; with ``sampling``, ``noise`` float32
    ``[batch, noise_size]`` of standard normals. Outputs (see :attr:`outputs`): ``action``
    and, for a recurrent policy, ``next_state``.

    Args:
        model: the trained actor-critic (frozen, in eval mode).
        obs_shape: one observation's shape.
        action_space: the env's action space.
        sampling: draw the action from the ``noise`` input instead of taking the mode.
    """

    def __init__(
        self,
        model: ActorCritic,
        obs_shape: tuple[int, ...],
        action_space: ActionSpace,
        sampling: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.obs_shape = tuple(obs_shape)
        self.action_space = action_space
        self.sampling = bool(sampling)
        self.recurrent = model.recurrent
        self.clip: float | None = None
        self.register_buffer("obs_mean", None)
        self.register_buffer("obs_std", None)
        if model.obs_rms is not None:
            rms = model.obs_rms
            # As RunningNorm.normalize computes them: float64 statistics cast to float32.
            self.obs_mean = rms.mean.to(torch.float32)
            self.obs_std = torch.sqrt(rms.var + NORM_EPS).to(torch.float32)
            self.clip = None if rms.clip is None else float(rms.clip)
        self.register_buffer("low", None)
        self.register_buffer("high", None)
        if isinstance(action_space, Box):
            self.low = torch.tensor(action_space.low, dtype=torch.float32)
            self.high = torch.tensor(action_space.high, dtype=torch.float32)

    def inputs(self) -> list[TensorSpec]:
        """The graph's inputs."""
        specs = [TensorSpec("obs", "float32", (BATCH, *self.obs_shape))]
        if self.recurrent:
            specs.append(TensorSpec("state", "float32", (BATCH, self.model.state_size)))
            specs.append(TensorSpec("episode_start", "bool", (BATCH,)))
        if self.sampling:
            specs.append(TensorSpec("noise", "float32", (BATCH, noise_size(self.action_space))))
        return specs

    def outputs(self) -> list[TensorSpec]:
        """The graph's outputs."""
        specs = [action_spec(self.action_space)]
        if self.recurrent:
            specs.append(TensorSpec("next_state", "float32", (BATCH, self.model.state_size)))
        return specs

    def example_inputs(self, batch: int = 2) -> tuple[Tensor, ...]:
        """Inputs of ``batch`` rows to trace the graph with."""
        dtypes = {"float32": torch.float32, "bool": torch.bool}
        return tuple(
            torch.zeros(batch, *(int(n) for n in spec.shape[1:]), dtype=dtypes[spec.dtype])
            for spec in self.inputs()
        )

    def forward(self, obs: Tensor, *extra: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        """The action (and next state) for a batch; inputs as the class docstring lists."""
        x = obs
        if self.obs_mean is not None:
            x = (x - self.obs_mean) / self.obs_std
            if self.clip is not None:
                x = x.clamp(-self.clip, self.clip)
        if not self.recurrent:
            dist = self.model.get_dist(x)
            action = sample_with_noise(dist, extra[0]) if self.sampling else dist.mode()
            return self._bounded(action)
        state, episode_start, *noise = extra
        # As predict steps it; a sampling graph draws from the same step's distribution
        # (get_dist replays the actor's trunk for it: one step of one-step segments).
        action, _, _, next_state = self.model.step(x, state, episode_start, deterministic=True)
        if self.sampling:
            dist = self.model.get_dist(x, state, episode_start)
            action = sample_with_noise(dist, noise[0])
        return self._bounded(action), next_state

    def _bounded(self, action: Tensor) -> Tensor:
        """A Box action clipped to the space's bounds (others unchanged)."""
        if self.low is None:
            return action
        return torch.clamp(action, self.low, self.high)
