"""The learner: BaseLearner and its hooks."""

from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.checkpoint import (
    BEST_CKPT,
    BestEval,
    checkpoint_iter,
    latest_checkpoint,
    latest_valid_checkpoint,
    read_checkpoint,
    remove_stale_tmp,
)
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
    "BEST_CKPT",
    "LEARNER_HOOK_REGISTRY",
    "POSITIONS",
    "BaseLearner",
    "BestEval",
    "Hook",
    "LearnerHook",
    "LoadCkptHook",
    "LogReduceHook",
    "LogShowHook",
    "SaveCkptHook",
    "build_hooks",
    "checkpoint_iter",
    "latest_checkpoint",
    "latest_valid_checkpoint",
    "read_checkpoint",
    "register_learner_hook",
    "remove_stale_tmp",
]
