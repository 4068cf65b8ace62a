"""A full disk is one clear error, and leaves no partial file behind."""

import errno
import os

import pytest
import torch

from ding_lite.utils import file_io
from ding_lite.utils.errors import DingLiteError, DiskFullError


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
