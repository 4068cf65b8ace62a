"""The collector side of the parallel pipeline."""

from ding_lite.worker.collector.comm.async_collector import AsyncCollector

__all__ = ["AsyncCollector"]
