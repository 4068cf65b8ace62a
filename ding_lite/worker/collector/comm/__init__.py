"""The collector side of the parallel pipeline."""

from ding_lite.worker.collector.comm.async_collector import AsyncCollector
from ding_lite.worker.collector.comm.flask_fs_collector import FlaskFileSystemCollector

__all__ = ["AsyncCollector", "FlaskFileSystemCollector"]
