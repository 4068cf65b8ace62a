"""A killed save leaves a temp file and maybe a damaged newest checkpoint; resume copes."""

import logging

import pytest

from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_torch_save
from ding_lite.worker.learner.checkpoint import (
    checkpoints,
    read_checkpoint,
    remove_stale_tmp,
)


def _ckpt(folder, it):
    path = folder / f"ckpt_iter{it:08d}.pt"
    atomic_torch_save({"format": "ding_lite.ckpt.v1", "train_iter": it}, path)
    return path


def test_a_truncated_newest_checkpoint_falls_back_to_the_previous(tmp_path, caplog):
    folder = tmp_path / "ckpt"
    _ckpt(folder, 2)
    newest = _ckpt(folder, 4)
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    with caplog.at_level(logging.WARNING):
        path, state = read_checkpoint(folder)
    assert path.name == "ckpt_iter00000002.pt" and state["train_iter"] == 2
    assert any("ckpt_iter00000004.pt" in r.getMessage() for r in caplog.records)


def test_no_readable_checkpoint_is_one_clear_error(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "ckpt_iter00000001.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="no readable checkpoint") as caught:
        read_checkpoint(folder)
    assert "\n" not in str(caught.value)


def test_stale_temp_files_are_removed_and_nothing_else(tmp_path):
    folder = tmp_path / "ckpt"
    keep = _ckpt(folder, 1)
    stale = folder / ".ckpt_iter00000099.pt.abc123.tmp"
    stale.write_bytes(b"")
    other = folder / "notes.tmp"
    other.write_text("mine")
    assert remove_stale_tmp(folder) == [stale]
    assert keep.exists() and other.exists() and not stale.exists()
    assert checkpoints(folder) == [keep]
