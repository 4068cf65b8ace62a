"""Encoders: what turns one observation into the features the core and heads read.

``policy.model.encoder`` picks one: ``"mlp"`` flattens the observation into an MLP;
``"cnn"`` reads observations of shape ``[C, H, W]`` (a grid world's egocentric window)
with a small stack of ReLU convolutions, then the same MLP layers on their flattened
output. Both run functionally (``encode``), skipping ``nn.Module.__call__``, whose cost is
a large share of a small model's forward pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .layers import mlp_layers

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"tanh": torch.tanh, "relu": torch.relu}
ENCODERS = ("mlp", "cnn")


class MLPEncoder(nn.ModuleList):
    """Linear layers with an activation after each; observations are flattened first.

    A ``ModuleList`` of the linear layers itself, so its parameters are named ``0.weight``,
    ``1.weight``... as the actor-critic's trunks always were (old checkpoints load).

    Args:
        in_dim: Size of the flat input.
        hidden_sizes: Widths of the layers; empty: the input passes through (flattened).
        activation: A key of :data:`ACTIVATIONS`.
        ortho_init: Orthogonal init with gain sqrt(2) (else PyTorch's own).
    """

    def __init__(
        self, in_dim: int, hidden_sizes: Sequence[int], activation: str, ortho_init: bool
    ) -> None:
        super().__init__(mlp_layers(in_dim, hidden_sizes, ortho_init))
        self._activation = ACTIVATIONS[activation]
        #: Width of the features :meth:`encode` returns.
        self.out_dim = int(hidden_sizes[-1]) if hidden_sizes else in_dim

    def encode(self, x: Tensor) -> Tensor:
        """Features ``[B, out_dim]`` of observations ``[B, ...]`` (flattened if not flat)."""
        if x.dim() > 2:
            x = x.flatten(1)
        act = self._activation
        for layer in self:
            assert isinstance(layer, nn.Linear)
            x = act(F.linear(x, layer.weight, layer.bias))
        return x


class CNNEncoder(nn.Module):
    """ReLU convolutions (stride 1, no padding) over ``[C, H, W]`` observations, then an
    :class:`MLPEncoder` on their flattened output.

    Args:
        obs_shape: ``(C, H, W)`` of one observation.
        channels: Output channels of each convolution (at least one).
        kernel: Side of every convolution's square kernel; each shrinks H and W by
            ``kernel - 1``.
        hidden_sizes: Widths of the MLP layers after the convolutions.
        activation: Activation of the MLP layers (the convolutions use ReLU).
        ortho_init: Orthogonal init (gain sqrt(2)) of convolutions and linear layers.

    Raises:
        ValueError: ``obs_shape`` is not ``[C, H, W]``, ``channels`` is empty, or the window
            is too small for the stack of kernels.
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        channels: Sequence[int],
        kernel: int,
        hidden_sizes: Sequence[int],
        activation: str,
        ortho_init: bool,
    ) -> None:
        super().__init__()
        shape = tuple(int(s) for s in obs_shape)
        if len(shape) != 3:
            raise ValueError(
                f"policy.model.encoder='cnn' needs observations of shape [C, H, W], got "
                f"{list(shape)}; use policy.model.encoder='mlp' for flat observations"
            )
        channels = tuple(int(c) for c in channels)
        if not channels or min(channels) < 1 or int(kernel) < 1:
            raise ValueError(
                "policy.model.cnn_channels must list at least one positive channel count and "
                f"policy.model.cnn_kernel be >= 1, got {list(channels)} and {kernel!r}"
            )
        kernel = int(kernel)
        in_ch, height, width = shape
        out_h, out_w = height - len(channels) * (kernel - 1), width - len(channels) * (kernel - 1)
        if out_h < 1 or out_w < 1:
            raise ValueError(
                f"{len(channels)} convolutions of kernel {kernel} do not fit an observation "
                f"of {height} x {width}; lower policy.model.cnn_kernel or drop entries of "
                "policy.model.cnn_channels"
            )
        convs = []
        for out_ch in channels:
            conv = nn.Conv2d(in_ch, out_ch, kernel)
            if ortho_init:
                nn.init.orthogonal_(conv.weight, math.sqrt(2.0))
                assert conv.bias is not None  # Conv2d's default
                nn.init.zeros_(conv.bias)
            convs.append(conv)
            in_ch = out_ch
        self.convs = nn.ModuleList(convs)
        self.mlp = MLPEncoder(in_ch * out_h * out_w, hidden_sizes, activation, ortho_init)
        #: Width of the features :meth:`encode` returns.
        self.out_dim = self.mlp.out_dim

    def encode(self, x: Tensor) -> Tensor:
        """Features ``[B, out_dim]`` of observations ``[B, C, H, W]``."""
        for conv in self.convs:
            assert isinstance(conv, nn.Conv2d)
            x = F.relu(F.conv2d(x, conv.weight, conv.bias))
        return self.mlp.encode(x.flatten(1))


Encoder = MLPEncoder | CNNEncoder


def build_encoder(
    kind: str,
    obs_shape: Sequence[int],
    hidden_sizes: Sequence[int],
    activation: str,
    ortho_init: bool,
    cnn_channels: Sequence[int],
    cnn_kernel: int,
) -> Encoder:
    """The encoder ``kind`` (``policy.model.encoder``) for observations of ``obs_shape``.

    Raises:
        ValueError: unknown ``kind``, or a ``cnn`` that does not fit ``obs_shape``.
    """
    if kind == "mlp":
        return MLPEncoder(math.prod(obs_shape), hidden_sizes, activation, ortho_init)
    if kind == "cnn":
        return CNNEncoder(obs_shape, cnn_channels, cnn_kernel, hidden_sizes, activation, ortho_init)
    raise ValueError(f"unknown policy.model.encoder {kind!r}; known: {', '.join(ENCODERS)}")


__all__ = ["ACTIVATIONS", "CNNEncoder", "ENCODERS", "Encoder", "MLPEncoder", "build_encoder"]
