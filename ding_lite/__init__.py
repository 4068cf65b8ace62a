"""ding_lite: a small, fast, hook-driven RL training service in PyTorch.

The public names load on first use (PEP 562), so ``import ding_lite`` and the command line's
``--help`` do not pay for importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ding_lite.utils.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "BaseLearner": "ding_lite.worker.learner",
    "Evaluator": "ding_lite.worker.collector",
    "Hook": "ding_lite.worker.learner",
    "LearnerHook": "ding_lite.worker.learner",
    "PPOPolicy": "ding_lite.policy",
    "SerialCollector": "ding_lite.worker.collector",
    "TrainedPolicy": "ding_lite.entry.trained.predict",
    "TrainedRun": "ding_lite.entry.trained.predict",
    "compile_config": "ding_lite.config",
    "create_env": "ding_lite.envs",
    "get_config": "ding_lite.config",
    "load_policy": "ding_lite.entry.trained.predict",
    "parallel_pipeline": "ding_lite.entry.pipelines.parallel",
    "register_learner_hook": "ding_lite.worker.learner",
    "serial_pipeline": "ding_lite.entry.pipelines.serial",
}

__all__ = [
    "BaseLearner",
    "Evaluator",
    "Hook",
    "LearnerHook",
    "PPOPolicy",
    "SerialCollector",
    "TrainedPolicy",
    "TrainedRun",
    "compile_config",
    "create_env",
    "get_config",
    "load_policy",
    "parallel_pipeline",
    "register_learner_hook",
    "serial_pipeline",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on demand
    from ding_lite.config import compile_config, get_config
    from ding_lite.entry.pipelines.parallel import parallel_pipeline
    from ding_lite.entry.pipelines.serial import serial_pipeline
    from ding_lite.entry.trained.predict import TrainedPolicy, TrainedRun, load_policy
    from ding_lite.envs import create_env
    from ding_lite.policy import PPOPolicy
    from ding_lite.worker.collector import Evaluator, SerialCollector
    from ding_lite.worker.learner import BaseLearner, Hook, LearnerHook, register_learner_hook

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
