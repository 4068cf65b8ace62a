"""Data movement between collectors and learners."""

from ding_lite.data.dataloader import AsyncDataLoader

__all__ = ["AsyncDataLoader"]
