"""Text logging and the tensorboard writer."""

from __future__ import annotations

import logging
import math
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

from ding_lite.utils.errors import DiskFullError, is_disk_full

LOGGER_NAME = "ding_lite"
CONSOLE_HANDLER = "ding_lite.console"  # the name of the stderr handler set up once


def get_logger(name: str | None = None) -> logging.Logger:
    """Returns the ``ding_lite`` logger or one of its children."""
    return logging.getLogger(LOGGER_NAME if not name else f"{LOGGER_NAME}.{name}")


def setup_file_logging(path: str | os.PathLike, level: int = logging.INFO) -> logging.Handler:
    """Sends ``ding_lite`` log records to ``path`` (appending). Returns the handler."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handler = _FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = get_logger()
    logger.addHandler(handler)
    logger.setLevel(min(level, logger.level or level))
    return handler


class _FileHandler(logging.FileHandler):
    """A FileHandler that goes quiet after its first failed write.

    logging's default prints a traceback to stderr for every record it cannot write (on a
    full disk: every line). The writes that matter (checkpoints, result.json) report a full
    disk themselves, as one line.
    """

    _failed = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self._failed:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self._failed = True

    def close(self) -> None:
        try:
            super().close()
        except OSError:  # the last buffered lines could not be written either
            self._failed = True


def setup_console_logging(level: int = logging.WARNING) -> None:
    """Shows ``ding_lite`` records at ``level`` and above on stderr, once."""
    logger = get_logger()
    if not any(h.get_name() == CONSOLE_HANDLER for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(CONSOLE_HANDLER)
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        handler.setLevel(level)
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def _load_tensorboardx() -> None:
    """Imports tensorboardX without torch where the process has not imported torch.

    tensorboardX's package imports torch when it is installed, only to accept tensors in
    its ``SummaryWriter``, which ding_lite does not use: ~2 s of CPU that the torch-free
    processes (the launcher, the coordinator, the dashboard) would pay at every start. Its
    record and protobuf modules, all we use, need no torch.
    """
    if "tensorboardX" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        import tensorboardX  # noqa: F401
    finally:
        del sys.modules["torch"]


def build_tb_logger(log_dir: str | os.PathLike) -> TbWriter:
    """Creates a tensorboard writer under ``log_dir`` (see :class:`TbWriter`)."""
    return TbWriter(log_dir)


class TbWriter:
    """Writes a tensorboard event file, in the calling thread.

    tensorboardX's ``SummaryWriter`` writes from a background thread: when the disk fills
    up, that thread dies with a traceback and every later ``add_scalar`` blocks for ever on
    its full queue. Here a failed write raises in the caller (:class:`DiskFullError` for a
    full disk) and the writer is then closed, so a run ends instead of hanging.

    Args:
        log_dir: folder of the event file (created if missing).
        flush_secs: the file is flushed (and fsynced) at most this many seconds after a
            write, and by ``flush()`` / ``close()``.
    """

    def __init__(self, log_dir: str | os.PathLike, flush_secs: float = 10.0) -> None:
        _load_tensorboardx()
        from tensorboardX.record_writer import RecordWriter

        self.log_dir = Path(log_dir)
        self.flush_secs = flush_secs
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._closed = False
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
        self.path = self.log_dir / name
        self._records: Any = None
        self._next_flush = time.monotonic() + flush_secs
        with self._lock:
            self._guard(self.log_dir.mkdir, parents=True, exist_ok=True)
            self._records = self._guard(RecordWriter, str(self.path))
        self._add(file_version="brain.Event:2")

    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Records ``scalar_value`` (a number or a one-element tensor) under ``tag``.

        NaN and inf are recorded as they are (a diverging run shows them), silently.
        """
        from tensorboardX.proto.summary_pb2 import Summary

        value = Summary.Value(tag=tag, simple_value=float(scalar_value))
        self._add(summary=Summary(value=[value]), step=global_step, walltime=walltime)

    def add_text(
        self,
        tag: str,
        text_string: str,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Records a text (tensorboard's Text tab)."""
        from tensorboardX.summary import text

        self._add(summary=text(tag, text_string), step=global_step, walltime=walltime)

    def add_animation(
        self, tag: str, gif: bytes, width: int, height: int, global_step: int | None = None
    ) -> None:
        """Records an animated GIF as an image (tensorboard's Images tab plays it): what
        tensorboardX's ``add_video`` writes, without its moviepy dependency."""
        from tensorboardX.proto.summary_pb2 import Summary

        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=gif)
        summary = Summary(value=[Summary.Value(tag=tag, image=image)])
        self._add(summary=summary, step=global_step)

    def add_histogram(
        self,
        tag: str,
        values: Any,
        global_step: int | None = None,
        bins: str | int = "auto",
        walltime: float | None = None,
    ) -> None:
        """Records a histogram of ``values`` (a tensor or array); ``bins`` as numpy takes it."""
        from tensorboardX.summary import histogram

        summary = histogram(tag, _as_numpy(values), bins)
        self._add(summary=summary, step=global_step, walltime=walltime)

    def flush(self) -> None:
        """Writes what is buffered to disk (nothing after a failed write or close)."""
        with self._lock:
            if self._records is not None and self._error is None and not self._closed:
                self._guard(self._records.flush)
                self._next_flush = time.monotonic() + self.flush_secs

    def close(self) -> None:
        """Flushes and closes the file; quiet (and safe to repeat) after a failed write."""
        if self._error is None and not self._closed:
            self.flush()
        with self._lock:
            self._close_quietly()

    def _add(
        self, *, step: int | None = None, walltime: float | None = None, **fields: Any
    ) -> None:
        from tensorboardX.proto.event_pb2 import Event

        event = Event(wall_time=time.time() if walltime is None else walltime, **fields)
        if step is not None:
            event.step = int(step)
        data = event.SerializeToString()
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._closed:
                raise ValueError(f"tensorboard writer {self.path} is closed")
            self._guard(self._records.write, data)
            if time.monotonic() >= self._next_flush:
                self._guard(self._records.flush)
                self._next_flush = time.monotonic() + self.flush_secs

    def _guard(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Runs one file operation; a failure closes the writer and is raised (and kept)."""
        try:
            return call(*args, **kwargs)
        except OSError as err:
            self._error = DiskFullError.writing(self.path) if is_disk_full(err) else err
            self._close_quietly()
            raise self._error from None

    def _close_quietly(self) -> None:
        self._closed = True
        records, self._records = self._records, None
        if records is not None:
            try:
                records.close()
            except OSError:  # its buffer could not be written either; already reported
                pass

    def __enter__(self) -> TbWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _as_numpy(values: Any) -> Any:
    import numpy as np

    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def close_tb_logger(writer: Any, timeout: float = 5.0) -> bool:
    """Closes a tensorboard writer, giving up after ``timeout`` seconds.

    A writer whose disk is full (or whose filesystem hangs) can block in ``close()``; a run
    must still end. An error while closing is logged, not raised: the run's outcome was
    decided before. Returns whether it closed cleanly in time.
    """
    failed: list[BaseException] = []

    def close() -> None:
        try:
            writer.close()
        except Exception as err:  # reported below, in the caller's thread
            failed.append(err)

    closer = threading.Thread(target=close, name="ding_lite-tb-close", daemon=True)
    closer.start()
    closer.join(timeout)
    if closer.is_alive():
        get_logger().warning(
            f"tensorboard writer did not close within {timeout:g} s; its last figures may "
            "be missing"
        )
        return False
    if failed:
        get_logger().info(f"tensorboard writer closed with an error: {failed[0]}")
        return False
    return True


def read_tb_scalars(path: str | os.PathLike) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of the scalars in one tensorboard event file."""
    return {
        tag: [(step, value) for step, value, _ in points]
        for tag, points in read_tb_events(path).items()
    }


def read_tb_events(path: str | os.PathLike) -> dict[str, list[tuple[int, float, float]]]:
    """``{tag: [(step, value, wall time), ...]}`` of the scalars in one event file.

    Damaged records are left out (:func:`read_tb_events_from` says which); so is a record
    still being written at the end of the file.
    """
    return read_tb_events_from(path, 0).scalars


class TbRead(NamedTuple):
    """What one read of an event file found.

    Attributes:
        scalars: ``{tag: [(step, value, wall time), ...]}``.
        offset: the byte after the last complete record (read or skipped): where the next
            read of a file that grows starts.
        damaged: one line per damaged record that was skipped, or where reading stopped.
        stopped: a record's length was damaged, so no later record can be found: nothing
            after ``offset`` will ever be read.
    """

    scalars: dict[str, list[tuple[int, float, float]]]
    offset: int
    damaged: list[str]
    stopped: bool


def read_tb_events_from(path: str | os.PathLike, offset: int) -> TbRead:
    """The scalars of the complete records from byte ``offset`` on: read a file a writer
    still appends to a piece at a time.

    Reads the record format (length, its masked CRC-32C, the event, its masked CRC-32C) with
    tensorboardX's own protobuf classes, so no tensorboard install is needed. A record whose
    event fails its CRC, is no event, or has no finite wall time is skipped; one whose
    length fails its CRC ends the read there (the records after it cannot be found). Either
    is said in :attr:`TbRead.damaged`; the points before it are kept.

    Raises:
        OSError: the file cannot be read.
    """
    _load_tensorboardx()
    from google.protobuf.message import DecodeError
    from tensorboardX.proto import event_pb2
    from tensorboardX.record_writer import masked_crc32c

    scalars: dict[str, list[tuple[int, float, float]]] = {}
    damaged: list[str] = []
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        (length, length_crc) = struct.unpack_from("<QI", data, pos)
        if masked_crc32c(data[pos : pos + 8]) != length_crc:
            damaged.append(
                f"{path}: the record at byte {offset + pos:,} has a damaged length; it and "
                f"the {len(data) - pos - 12:,} bytes after it are left out"
            )
            return TbRead(scalars, offset + pos, damaged, True)
        start, end = pos + 12, pos + 12 + length
        if end + 4 > len(data):
            break
        record, at, pos = data[start:end], offset + pos, end + 4
        event = event_pb2.Event()
        why = ""
        if masked_crc32c(record) != struct.unpack_from("<I", data, end)[0]:
            why = "fails its checksum"
        else:
            try:
                event.ParseFromString(record)
            except DecodeError:
                why = "is not a tensorboard event"
        if not why and not math.isfinite(event.wall_time):
            why = "has no finite wall time"
        if why:
            damaged.append(f"{path}: the record at byte {at:,} {why}; skipped")
            continue
        for value in event.summary.value:
            if value.HasField("simple_value"):
                point = (event.step, value.simple_value, event.wall_time)
                scalars.setdefault(value.tag, []).append(point)
    return TbRead(scalars, offset + pos, damaged, False)


EVENT_GLOB = "events.out.tfevents.*"  # how tensorboard names an event file
