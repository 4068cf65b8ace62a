"""A killed save leaves a temp file and maybe a damaged newest checkpoint; resume copes."""

import logging

import pytest
import torch
from learner_fakes import VectorPolicy

from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_torch_save
from ding_lite.worker.learner import (
    BaseLearner,
    checkpoint_iter,
    latest_checkpoint,
    latest_valid_checkpoint,
)
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


@pytest.mark.parametrize("damage", ["empty", "half"])
def test_learner_resumes_from_the_previous_checkpoint_when_the_newest_is_damaged(
    tmp_path, caplog, damage
):
    learner = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path)
    for _ in range(3):
        learner.train(torch.ones(3))
        learner.save_checkpoint()
    newest = latest_checkpoint(tmp_path / "ckpt")
    data = newest.read_bytes()
    newest.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    (tmp_path / "ckpt" / ".ckpt_iter00000004.pt.abc.tmp").write_bytes(b"")  # a killed save

    assert latest_valid_checkpoint(tmp_path / "ckpt").name == "ckpt_iter00000002.pt"
    resumed = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path)
    with caplog.at_level(logging.WARNING):
        resumed.load_checkpoint(tmp_path / "ckpt")
    assert resumed.last_iter == 2 and torch.equal(resumed.policy.w, torch.full((3,), 2.0))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(newest.name in w and "skipping" in w for w in warnings)
    assert not list((tmp_path / "ckpt").glob(".*.tmp"))  # the stale temp file is gone


def test_latest_valid_checkpoint_is_none_without_a_readable_one(tmp_path):
    assert latest_valid_checkpoint(tmp_path / "missing") is None
    folder = tmp_path / "ckpt"
    folder.mkdir()
    assert latest_valid_checkpoint(folder) is None
    (folder / "ckpt_iter00000003.pt").write_bytes(b"")
    assert latest_valid_checkpoint(folder) is None
    assert checkpoint_iter(folder / "ckpt_iter00000003.pt") == 3
    assert checkpoint_iter(folder / "final.pt") is None


def test_the_first_save_removes_stale_temp_files(tmp_path):
    stale = tmp_path / "ckpt" / ".ckpt_iter00000001.pt.x1y2z3ab.tmp"
    stale.parent.mkdir()
    stale.write_bytes(b"")
    learner = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path)
    learner.train(torch.ones(3))
    learner.save_checkpoint()
    assert not stale.exists()
    assert [p.name for p in (tmp_path / "ckpt").iterdir()] == ["ckpt_iter00000001.pt"]
