"""ding_lite: a small, fast, hook-driven RL training service in PyTorch."""

from ding_lite.config import compile_config, get_config
from ding_lite.entry.parallel import parallel_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.envs import create_env
from ding_lite.policy import PPOPolicy
from ding_lite.worker.collector import Evaluator, SerialCollector
from ding_lite.worker.learner import (
    BaseLearner,
    Hook,
    LearnerHook,
    register_learner_hook,
)

__version__ = "0.1.0"

__all__ = [
    "BaseLearner",
    "Evaluator",
    "Hook",
    "LearnerHook",
    "PPOPolicy",
    "SerialCollector",
    "compile_config",
    "create_env",
    "get_config",
    "parallel_pipeline",
    "register_learner_hook",
    "serial_pipeline",
]
