"""Collectors (rollouts with advantages) and the evaluator."""

from ding_lite.worker.collector.evaluator import EvalResult, Evaluator
from ding_lite.worker.collector.serial_collector import SerialCollector

__all__ = ["EvalResult", "Evaluator", "SerialCollector"]
