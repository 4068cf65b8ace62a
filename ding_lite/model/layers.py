"""Linear layers with PPO's initialisation, and the MLP trunks built from them."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn


def layer_init(layer: nn.Linear, gain: float, ortho_init: bool) -> nn.Linear:
    """``layer`` with orthogonal weights of ``gain`` and zero biases (PPO practice), or
    PyTorch's own initialisation when ``ortho_init`` is false."""
    if ortho_init:
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return layer


def mlp_layers(in_dim: int, hidden_sizes: Sequence[int], ortho_init: bool) -> nn.ModuleList:
    """Linear layers of the given widths from ``in_dim`` (gain sqrt(2)); the caller applies
    the activation between them."""
    layers = []
    for size in hidden_sizes:
        layers.append(layer_init(nn.Linear(in_dim, size), math.sqrt(2.0), ortho_init))
        in_dim = size
    return nn.ModuleList(layers)
