"""Actor-critic networks and the action distributions they return."""

from .actor_critic import ACTIVATIONS, ActorCritic
from .build import MODEL_OPTIONS, build_model
from .dists import (
    TANH_CLAMP_EPS,
    ActionBounds,
    ActionDist,
    CategoricalDist,
    GaussianDist,
    HybridDist,
    MultiCategoricalDist,
    pad_logits,
)

__all__ = [
    "ACTIVATIONS",
    "MODEL_OPTIONS",
    "TANH_CLAMP_EPS",
    "ActionBounds",
    "ActionDist",
    "ActorCritic",
    "CategoricalDist",
    "GaussianDist",
    "HybridDist",
    "MultiCategoricalDist",
    "build_model",
    "pad_logits",
]
