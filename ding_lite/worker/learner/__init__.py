"""The learner: BaseLearner and its hooks."""

from ding_lite.worker.learner.base_learner import BaseLearner, latest_checkpoint
from ding_lite.worker.learner.learner_hook import (
    LEARNER_HOOK_REGISTRY,
    POSITIONS,
    Hook,
    LearnerHook,
    LoadCkptHook,
    LogReduceHook,
    LogShowHook,
    SaveCkptHook,
    build_hooks,
    register_learner_hook,
)

__all__ = [
    "LEARNER_HOOK_REGISTRY",
    "POSITIONS",
    "BaseLearner",
    "Hook",
    "LearnerHook",
    "LoadCkptHook",
    "LogReduceHook",
    "LogShowHook",
    "SaveCkptHook",
    "build_hooks",
    "latest_checkpoint",
    "register_learner_hook",
]
