"""Pure tensor functions for RL maths: GAE, PPO losses, the advantage-estimator,
policy-loss and KL-estimator registries, prioritized segment sampling."""

from .adv_estimator import (
    ADV_ESTIMATOR_REGISTRY,
    AdvEstimator,
    AdvFn,
    get_adv_estimator,
    list_adv_estimators,
    register_adv_estimator,
)
from .gae import gae, gae_with_returns
from .kl_estimators import (
    KL_ESTIMATOR_REGISTRY,
    get_kl_estimator,
    list_kl_estimators,
    register_kl_estimator,
)
from .policy_loss import (
    POLICY_LOSS_REGISTRY,
    ClipRanges,
    PolicyLossFn,
    get_policy_loss,
    list_policy_losses,
    needs_proximal,
    register_policy_loss,
)
from .ppo import (
    PolicyLoss,
    entropy_loss,
    explained_variance,
    normalize_advantages,
    ppo_policy_loss,
    ppo_value_loss,
)
from .prioritized import is_weights, prio_beta, segment_probs
from .vtrace import vtrace

__all__ = [
    "ADV_ESTIMATOR_REGISTRY",
    "KL_ESTIMATOR_REGISTRY",
    "POLICY_LOSS_REGISTRY",
    "AdvEstimator",
    "AdvFn",
    "ClipRanges",
    "PolicyLoss",
    "PolicyLossFn",
    "entropy_loss",
    "explained_variance",
    "gae",
    "gae_with_returns",
    "get_adv_estimator",
    "get_kl_estimator",
    "get_policy_loss",
    "is_weights",
    "list_adv_estimators",
    "list_kl_estimators",
    "list_policy_losses",
    "needs_proximal",
    "normalize_advantages",
    "ppo_policy_loss",
    "ppo_value_loss",
    "prio_beta",
    "register_adv_estimator",
    "register_kl_estimator",
    "register_policy_loss",
    "segment_probs",
    "vtrace",
]
