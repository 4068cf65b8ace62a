"""Seeding and RNG state capture, so a checkpoint resumes bit-exactly."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def set_seed(seed: int) -> None:
    """Seeds Python, NumPy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_rng_state() -> dict[str, Any]:
    """Returns torch's CPU (and CUDA) generator states as tensors."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restores a state from :func:`get_rng_state`."""
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


COLLECT_STREAM = 0x636F6C6C  # "coll": the stream a collector samples actions from
UPDATE_STREAM = 0x75706474  # "updt": the stream the update draws minibatch orders from


def stream_seed(seed: int, stream: int) -> int:
    """The seed of one of a run's random streams (a 63-bit mix of ``seed`` and ``stream``)."""
    mixed = (seed * 0x9E3779B97F4A7C15 + stream * 0xBF58476D1CE4E5B9) % 2**64
    return mixed >> 1


class RngStream:
    """A torch random stream of its own, swapped in for the global generator while in use.

    Sampling code (``dist.sample()``, ``torch.randperm``) draws from torch's global
    generator. Wrapping it in ``with stream:`` makes it draw from this stream instead and
    leaves the global generator as it was, so collection and the update draw the same
    numbers whether they run in one process (serial) or in two (parallel), in any order.

    Args:
        seed: The stream's seed (see :func:`stream_seed`).
        device: Where it draws: "cpu", or a CUDA device (its generator is swapped too).
    """

    def __init__(self, seed: int, device: Any = "cpu") -> None:
        self.device = torch.device(device)
        generator = torch.Generator().manual_seed(seed)
        self._cpu = generator.get_state()
        self._cuda = None
        if self.device.type == "cuda":
            cuda = torch.Generator(device=self.device).manual_seed(seed)
            self._cuda = cuda.get_state()
        self._saved: tuple[Any, Any] | None = None

    def __enter__(self) -> RngStream:
        if self._saved is not None:
            raise RuntimeError("this random stream is already in use")
        cuda_saved = None
        if self._cuda is not None:
            cuda_saved = torch.cuda.get_rng_state(self.device)
            torch.cuda.set_rng_state(self._cuda, self.device)
        self._saved = (torch.get_rng_state(), cuda_saved)
        torch.set_rng_state(self._cpu)
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._saved is not None  # set by __enter__
        cpu_saved, cuda_saved = self._saved
        self._saved = None
        self._cpu = torch.get_rng_state()
        torch.set_rng_state(cpu_saved)
        if self._cuda is not None:
            self._cuda = torch.cuda.get_rng_state(self.device)
            torch.cuda.set_rng_state(cuda_saved, self.device)

    def state_dict(self) -> dict[str, Any]:
        """The stream's generator states (tensors), for a checkpoint."""
        state = {"cpu": self._cpu.clone()}
        if self._cuda is not None:
            state["cuda"] = self._cuda.clone()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`'s states."""
        self._cpu = state["cpu"].cpu().clone()
        if self._cuda is not None and "cuda" in state:
            self._cuda = state["cuda"].cpu().clone()
