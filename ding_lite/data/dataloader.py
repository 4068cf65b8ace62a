"""AsyncDataLoader: prefetches batches from a callable in a background thread."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()


class AsyncDataLoader:
    """Calls ``get_data()`` in a thread and hands its results out through a bounded queue.

    ``get_data`` returns a batch, or None when there is no more data. An exception raised by
    ``get_data`` is re-raised by ``next()`` in the consumer's thread.

    Args:
        get_data: produces one batch per call.
        prefetch: batches fetched ahead.
        timeout: seconds ``next()`` waits for a batch before raising ``TimeoutError``.
    """

    def __init__(
        self, get_data: Callable[[], Any], prefetch: int = 2, timeout: float = 600.0
    ) -> None:
        self._get_data = get_data
        self._queue: queue.Queue = queue.Queue(maxsize=max(prefetch, 1))
        self._timeout = timeout
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="ding-lite-dataloader", daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._get_data()
            except BaseException as err:  # handed to the consumer, which re-raises it
                self._put(err)
                return
            if data is None:
                self._put(_STOP)
                return
            if not self._put(data):
                return

    def next(self) -> Any:
        """Returns the next batch, or None once the source is exhausted.

        Raises:
            TimeoutError: no batch arrived within ``timeout`` seconds.
        """
        if self._done:
            return None
        try:
            item = self._queue.get(timeout=self._timeout)
        except queue.Empty:
            raise TimeoutError(f"no data arrived within {self._timeout:g} s") from None
        if item is _STOP:
            self._done = True
            return None
        if isinstance(item, BaseException):
            self._done = True
            raise item
        return item

    def close(self, timeout: float = 5.0) -> None:
        """Stops the thread (waits at most ``timeout`` seconds)."""
        self._stop.set()
        self._thread.join(timeout=timeout)
