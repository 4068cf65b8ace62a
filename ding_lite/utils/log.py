"""Text logging and the tensorboardX writer."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

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
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    return SummaryWriter(str(log_dir))
