"""Turning a config's device name into a torch device; naming this machine's CPU."""

from __future__ import annotations

import platform
from pathlib import Path

import torch

from ding_lite.utils.errors import ConfigError


def resolve_device(name: str) -> torch.device:
    """Turns a config device ("cpu", "cuda", "cuda:N", "auto") into a usable device.

    Raises:
        ConfigError: CUDA asked for but not available, or a CUDA index this machine lacks.
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device '{name}' asked for but CUDA is not available; use --device cpu")
    device = torch.device(name)
    if device.type == "cuda" and device.index is not None:
        count = torch.cuda.device_count()
        if device.index >= count:
            raise ConfigError(
                f"device '{name}' asked for but this machine has {count} CUDA device(s)"
                f" (cuda:0 to cuda:{count - 1})"
            )
    return device


def cpu_model() -> str:
    """This machine's CPU model ("AMD EPYC", from /proc/cpuinfo where there is one), for the
    provenance of benchmark figures and numerical references."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()
