"""Text logging and the tensorboardX writer."""

from __future__ import annotations

import logging
import os
import struct
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # tensorboardX imports torch: loaded only where a writer is built
    from tensorboardX import SummaryWriter

LOGGER_NAME = "ding_lite"


def get_logger(name: str | None = None) -> logging.Logger:
    """Returns the ``ding_lite`` logger or one of its children."""
    return logging.getLogger(LOGGER_NAME if not name else f"{LOGGER_NAME}.{name}")


def setup_file_logging(path: str | os.PathLike, level: int = logging.INFO) -> logging.Handler:
    """Sends ``ding_lite`` log records to ``path`` (appending). Returns the handler."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = get_logger()
    logger.addHandler(handler)
    logger.setLevel(min(level, logger.level or level))
    return handler


def setup_console_logging(level: int = logging.WARNING) -> None:
    """Shows ``ding_lite`` records at ``level`` and above on stderr, once."""
    logger = get_logger()
    if not any(getattr(h, "_ding_console", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        handler.setLevel(level)
        handler._ding_console = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def build_tb_logger(log_dir: str | os.PathLike) -> SummaryWriter:
    """Creates a tensorboardX writer under ``log_dir``."""
    from tensorboardX import SummaryWriter

    Path(log_dir).mkdir(parents=True, exist_ok=True)
    return SummaryWriter(str(log_dir))


def close_tb_logger(writer: Any, timeout: float = 5.0) -> bool:
    """Closes a tensorboard writer, giving up after ``timeout`` seconds.

    A writer whose disk is full can block in ``close()`` for ever; a run must still end.
    Returns whether it closed in time.
    """
    closer = threading.Thread(target=writer.close, name="ding_lite-tb-close", daemon=True)
    closer.start()
    closer.join(timeout)
    if closer.is_alive():
        get_logger().warning(
            f"tensorboard writer did not close within {timeout:g} s; its last figures may "
            "be missing"
        )
        return False
    return True


def read_tb_scalars(path: str | os.PathLike) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of the scalars in one tensorboard event file.

    Reads the record format (length, its crc, the event, its crc) with tensorboardX's own
    protobuf classes, so no tensorboard install is needed; a record still being written at
    the end of the file is left out. CRCs are not checked.
    """
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    data = Path(path).read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        start, end = pos + 12, pos + 12 + length
        if end + 4 > len(data):
            break
        event = event_pb2.Event()
        event.ParseFromString(data[start:end])
        for value in event.summary.value:
            if value.HasField("simple_value"):
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
        pos = end + 4
    return scalars
