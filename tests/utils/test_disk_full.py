"""A full disk is one clear error, and leaves no partial file behind."""

import errno
import os
import threading
import time

import pytest
import torch

from ding_lite.utils import file_io
from ding_lite.utils.errors import DingLiteError, DiskFullError
from ding_lite.utils.log import build_tb_logger, close_tb_logger, get_logger, setup_file_logging


def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("writer", ["json", "torch"])
def test_enospc_becomes_one_line_and_leaves_nothing(tmp_path, monkeypatch, writer):
    monkeypatch.setattr(file_io.os, "fsync", _full)
    target = tmp_path / "out" / "file"
    with pytest.raises(DiskFullError) as caught:
        if writer == "json":
            file_io.atomic_write_json({"a": 1}, target)
        else:
            file_io.atomic_torch_save({"t": torch.zeros(3)}, target)
    message = str(caught.value)
    assert isinstance(caught.value, DingLiteError) and caught.value.errno == errno.ENOSPC
    assert "\n" not in message and str(target) in message and "disk full" in message
    assert os.listdir(tmp_path / "out") == []  # no temp file, no partial file


def test_other_os_errors_pass_through(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(file_io.os, "fsync", denied)
    with pytest.raises(PermissionError):
        file_io.atomic_write_text("x", tmp_path / "f")


def test_edquot_counts_as_full_too(tmp_path, monkeypatch):
    def over_quota(*args, **kwargs):
        raise OSError(errno.EDQUOT, "Disk quota exceeded")

    monkeypatch.setattr(file_io.os, "fsync", over_quota)
    with pytest.raises(DiskFullError, match="disk full while writing"):
        file_io.atomic_write_text("x", tmp_path / "f")
    assert os.listdir(tmp_path) == []


def test_tensorboard_writer_raises_disk_full_once_then_closes_quietly(tmp_path, monkeypatch):
    writer = build_tb_logger(tmp_path / "tb")
    writer.add_scalar("charts/x", 1.0, 0)
    monkeypatch.setattr(os, "fsync", _full)  # the flush of the event file hits a full disk
    with pytest.raises(DiskFullError) as caught:
        writer.flush()
    assert str(writer.path) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(DiskFullError):  # later figures fail fast instead of blocking
        writer.add_scalar("charts/x", 2.0, 1)
    writer.close()  # quiet: the error was reported once
    assert close_tb_logger(writer, timeout=1.0)


def test_close_tb_logger_gives_up_on_a_writer_that_blocks():
    release = threading.Event()

    class StuckWriter:  # a writer whose close() waits on a full disk for ever
        def close(self):
            release.wait(30)

    start = time.monotonic()
    assert close_tb_logger(StuckWriter(), timeout=0.2) is False
    assert time.monotonic() - start < 2
    release.set()


def test_log_file_on_a_full_disk_prints_no_traceback(capfd):
    handler = setup_file_logging("/dev/full")  # every write fails with ENOSPC
    try:
        for i in range(3):
            get_logger("test").warning(f"line {i}")
    finally:
        get_logger().removeHandler(handler)
        handler.close()
    assert "Traceback" not in capfd.readouterr().err
