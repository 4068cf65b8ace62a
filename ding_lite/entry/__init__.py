"""Pipelines and the command line: the only place where every layer meets."""

from ding_lite.entry.serial import serial_pipeline

__all__ = ["serial_pipeline"]
