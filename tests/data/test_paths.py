"""ding_lite.utils.paths: paths confined to a folder, rollout names, the data-folder scan."""

import os
import subprocess
import sys

import pytest
import torch

from ding_lite.data import write_rollout
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.paths import (
    UnsafePathError,
    is_inside,
    is_worker_id,
    parse_rollout_path,
    resolve_inside,
    rollout_name,
    scan_rollouts,
)


def test_a_path_inside_resolves(tmp_path):
    root = tmp_path / "data"
    (root / "c0").mkdir(parents=True)
    assert resolve_inside(root / "c0" / "x.pt", root) == (root / "c0" / "x.pt").resolve()
    assert resolve_inside(str(root / "c0" / ".." / "c1" / "y.pt"), root).name == "y.pt"
    assert is_inside(root / "not" / "yet" / "there.pt", root)


@pytest.mark.parametrize(
    "forged",
    [
        "{root}/c0/../../config.json",  # '..' climbing out
        "{root}/../data_other/x.pt",  # a sibling that shares the prefix
        "/etc/passwd",  # absolute, elsewhere
        "{root}",  # the folder itself is no file inside it
        "{root}/c0/../..",
    ],
)
def test_paths_outside_are_refused(tmp_path, forged):
    root = tmp_path / "data"
    root.mkdir()
    path = forged.format(root=root)
    with pytest.raises(UnsafePathError, match="is not inside"):
        resolve_inside(path, root)
    assert not is_inside(path, root)


def test_an_empty_root_refuses_everything(tmp_path):
    with pytest.raises(UnsafePathError, match="no folder"):
        resolve_inside(tmp_path / "x.pt", "")
    assert not is_inside("x.pt", "")


def test_a_symlink_escaping_the_folder_is_refused(tmp_path):
    root = tmp_path / "data"
    (root / "c0").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("keep me")
    (root / "c0" / "00000000_v0_n4.pt").symlink_to(secret)
    (root / "linked").symlink_to(tmp_path)
    with pytest.raises(UnsafePathError):
        resolve_inside(root / "c0" / "00000000_v0_n4.pt", root)
    assert not is_inside(root / "linked" / "secret.txt", root)


@pytest.mark.parametrize("bad", [None, 3, ["a"], {"path": "x"}, "a\0b"])
def test_values_that_are_no_usable_path_are_refused(tmp_path, bad):
    with pytest.raises(UnsafePathError) as info:
        resolve_inside(bad, tmp_path)
    assert isinstance(info.value, DingLiteError) and isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "seq,version,samples", [(0, 0, 1), (7, 12, 2048), (123_456_789, 10**6, 64), (5, 1, 99)]
)
def test_rollout_names_round_trip(tmp_path, seq, version, samples):
    name = rollout_name(seq, version, samples)
    meta = parse_rollout_path(tmp_path / "collector1.r2" / name)
    assert meta == {
        "path": str(tmp_path / "collector1.r2" / name),
        "collector": "collector1.r2",
        "seq": seq,
        "policy_version": version,
        "size": samples,
    }
    assert rollout_name(meta["seq"], meta["policy_version"], meta["size"]) == name


def test_rollout_name_format():
    assert rollout_name(3, 7, 64) == "00000003_v7_n64.pt"
    with pytest.raises(ValueError):
        rollout_name(0, 0, 0)
    with pytest.raises(ValueError):
        rollout_name(-1, 0, 4)


@pytest.mark.parametrize(
    "path",
    [
        "d/c0/.00000003_v7_n64.pt.abc123.tmp",  # a write in progress
        "d/c0/00000003.pt",  # the old name without version and size
        "d/c0/00000003_v07_n64.pt",  # not canonical
        "d/c0/00000003_v7_n0.pt",  # an empty rollout
        "d/c0/00000003_v7_n64.pt.tmp",
        "d/c0/3_v7_n64.pt",
        "d/../00000003_v7_n64.pt",  # the folder is no worker id
        "d/c 0/00000003_v7_n64.pt",
    ],
)
def test_other_names_are_no_rollouts(path):
    assert parse_rollout_path(path) is None


def test_worker_ids():
    for good in ["collector0", "c.r1", "a_b-c", "x" * 64]:
        assert is_worker_id(good)
    for bad in [".", "..", "", "a/b", "x" * 65, "c 0", "ü"]:
        assert not is_worker_id(bad)


def test_scan_lists_complete_rollouts_only(tmp_path):
    data = {"obs": torch.zeros(4, 2)}
    written = [
        write_rollout(tmp_path, "c1", 0, data, policy_version=2),
        write_rollout(tmp_path, "c0", 1, data, policy_version=3),
        write_rollout(tmp_path, "c0", 0, data, policy_version=3),
    ]
    (tmp_path / "c0" / ".00000002_v3_n4.pt.x1y2.tmp").write_bytes(b"half")
    (tmp_path / "c0" / "notes.txt").write_text("x")
    (tmp_path / "c0" / "00000005_v3_n4.pt").mkdir()  # a folder with a rollout's name
    outside = tmp_path.parent / f"{tmp_path.name}_outside.pt"
    outside.write_bytes(b"x")
    try:
        (tmp_path / "c0" / "00000009_v3_n4.pt").symlink_to(outside)
        (tmp_path / "c9").symlink_to(tmp_path / "c0")
        found = scan_rollouts(tmp_path)
    finally:
        outside.unlink()
    assert [(m["collector"], m["seq"]) for m in found] == [("c0", 0), ("c0", 1), ("c1", 0)]
    by_path = {m["path"]: m for m in written}
    for meta in found:
        expected = by_path[meta["path"]]
        assert set(meta) == set(expected)
        assert {k: meta[k] for k in meta if k != "created"} == {
            k: expected[k] for k in expected if k != "created"
        }
        assert abs(meta["created"] - expected["created"]) < 60
    assert scan_rollouts(tmp_path / "missing") == []


def test_write_rollout_refuses_ids_and_folders_that_escape(tmp_path):
    data = {"obs": torch.zeros(4, 2)}
    root = tmp_path / "data"
    root.mkdir()
    for bad in ["..", ".", "a/b", ""]:
        with pytest.raises(UnsafePathError, match="cannot name a data folder"):
            write_rollout(root, bad, 0, data, policy_version=0)
    (root / "c0").symlink_to(tmp_path)
    with pytest.raises(UnsafePathError, match="is not inside"):
        write_rollout(root, "c0", 0, data, policy_version=0)
    assert not list(tmp_path.glob("*.pt"))


def test_paths_module_imports_no_torch():
    code = (
        "import sys, ding_lite.utils.paths; "
        "assert 'torch' not in sys.modules, 'torch imported'; "
        "assert not [m for m in sys.modules if m.startswith('ding_lite.') and m not in "
        "('ding_lite.utils', 'ding_lite.utils.lazy', 'ding_lite.utils.paths', "
        "'ding_lite.utils.errors')]"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
