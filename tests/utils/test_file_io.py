"""Atomic writes leave no debris, stale temp files of killed writes are removed, and an
unreadable tensor file is one line naming it."""

import os
import subprocess
import sys

import pytest
import torch

from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_torch_save, remove_stale_tmp, safe_torch_load


def test_stale_tmp_removed_only_of_the_pattern_and_only_in_that_folder(tmp_path):
    folder = tmp_path / "ckpt"
    atomic_torch_save({"x": torch.ones(2)}, folder / "ckpt_iter00000001.pt")
    stale = folder / ".ckpt_iter00000002.pt.k3j_x9ab.tmp"
    stale.write_bytes(b"")  # what SIGKILL during a save leaves
    kept = {
        folder / "notes.tmp": "a user's file",
        folder / ".hidden": "not a temp file",
        folder / ".tmp": "no name part",
    }
    for path, text in kept.items():
        path.write_text(text)
    sub = folder / "sub"
    sub.mkdir()
    nested = sub / ".x.pt.abcdefgh.tmp"
    nested.write_bytes(b"")
    outside = tmp_path / ".y.pt.abcdefgh.tmp"
    outside.write_bytes(b"")
    linked = folder / ".z.pt.abcdefgh.tmp"
    linked.symlink_to(outside)

    assert remove_stale_tmp(folder) == [stale]
    assert not stale.exists() and (folder / "ckpt_iter00000001.pt").exists()
    assert all(path.read_text() == text for path, text in kept.items())
    assert nested.exists() and outside.exists() and linked.is_symlink()
    assert remove_stale_tmp(tmp_path / "missing") == []


def test_a_killed_write_leaves_a_tmp_that_the_next_run_removes(tmp_path):
    script = (
        "import os, sys\n"
        "from ding_lite.utils.file_io import atomic_write_text\n"
        "def hang(f):\n"
        "    f.write(b'half'); f.flush(); print('writing', flush=True); sys.stdin.read()\n"
        "from ding_lite.utils import file_io\n"
        f"file_io._atomic_write({str(tmp_path / 'out.json')!r}, hang)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "writing"
        proc.kill()
    finally:
        proc.wait(timeout=10)
    (left,) = os.listdir(tmp_path)
    assert left.startswith(".out.json.") and left.endswith(".tmp")
    assert [p.name for p in remove_stale_tmp(tmp_path)] == [left]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda data: b"", "the file is empty"),
        (lambda data: data[: len(data) // 2], "truncated or corrupt"),
        (lambda data: data[:-1], "truncated or corrupt"),
        (lambda data: b"\x00garbage" * 8, "not a torch tensor file"),
    ],
)
def test_unreadable_tensor_file_is_one_line_naming_it(tmp_path, damage, why):
    path = tmp_path / "ckpt_iter00000004.pt"
    atomic_torch_save({"w": torch.arange(1000.0)}, path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError) as caught:
        safe_torch_load(path)
    message = str(caught.value)
    assert why in message and str(path) in message and "\n" not in message
    assert "Errno" not in message


def test_file_io_imports_no_torch():
    """The coordinator writes JSON atomically and must not import torch."""
    code = "import sys, ding_lite.utils.file_io; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
