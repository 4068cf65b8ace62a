"""Policies: one model seen through learn, collect and eval modes."""

from ding_lite.policy.base import POLICY_REGISTRY, CollectMode, EvalMode, LearnMode, Policy
from ding_lite.policy.build import create_policy, policy_from_checkpoint
from ding_lite.policy.ppo import PPOPolicy

__all__ = [
    "POLICY_REGISTRY",
    "CollectMode",
    "EvalMode",
    "LearnMode",
    "PPOPolicy",
    "Policy",
    "create_policy",
    "policy_from_checkpoint",
]
