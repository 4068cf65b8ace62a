import threading

import pytest
import torch

from ding_lite.data import (
    policy_file,
    policy_versions,
    read_policy,
    read_rollout,
    reject_file,
    remove_newer_policies,
    remove_temp_files,
    write_policy,
    write_rollout,
)
from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.paths import parse_rollout_path


def test_rollout_round_trip(tmp_path):
    data = {"obs": torch.randn(8, 4), "action": torch.randint(0, 2, (8,))}
    meta = write_rollout(tmp_path, "c0", 3, data, policy_version=7, episode_returns=[1.0, 2.0])
    assert meta["size"] == 8 and meta["policy_version"] == 7 and meta["seq"] == 3
    assert meta["path"] == str(tmp_path / "c0" / "00000003_v7_n8.pt")
    named = parse_rollout_path(meta["path"])  # the name says what the metadata says
    assert named == {k: meta[k] for k in ("path", "collector", "seq", "policy_version", "size")}
    content = read_rollout(meta["path"])
    assert torch.equal(content["data"]["obs"], data["obs"])
    assert content["episode_returns"] == [1.0, 2.0] and content["policy_version"] == 7
    assert [p.name for p in (tmp_path / "c0").iterdir()] == ["00000003_v7_n8.pt"]  # no temp


def test_policy_publish_prunes_old_versions(tmp_path):
    state = {"w": torch.ones(3)}
    for version in range(1, 6):
        write_policy(tmp_path, version, state, keep=2)
    assert sorted(policy_versions(tmp_path)) == [4, 5]
    version, loaded = read_policy(policy_file(tmp_path, 5))
    assert version == 5 and torch.equal(loaded["w"], state["w"])


def test_publishing_never_prunes_the_version_just_published(tmp_path):
    """A learner resumed at v10 while v11..v13 are still there publishes v10: it stays, and
    only older versions are pruned."""
    state = {"w": torch.ones(3)}
    for version in range(7, 14):
        write_policy(tmp_path, version, state, keep=3)
    assert sorted(policy_versions(tmp_path)) == [11, 12, 13]
    write_policy(tmp_path, 10, state, keep=3)
    assert 10 in policy_versions(tmp_path)
    for version in (5, 6, 8):
        write_policy(tmp_path, version, state, keep=3)
    write_policy(tmp_path, 10, state, keep=3)  # keeps 10 and the two newest older: 6 and 8
    assert sorted(policy_versions(tmp_path)) == [6, 8, 10, 11, 12, 13]


def test_remove_newer_policies(tmp_path):
    state = {"w": torch.ones(3)}
    for version in (3, 4, 5, 6):
        write_policy(tmp_path, version, state, keep=10)
    removed = remove_newer_policies(tmp_path, 4)
    assert removed == [policy_file(tmp_path, 5), policy_file(tmp_path, 6)]
    assert sorted(policy_versions(tmp_path)) == [3, 4]
    assert remove_newer_policies(tmp_path / "missing", 0) == []


def test_reject_file_moves_aside_without_overwriting(tmp_path):
    rejected = tmp_path / "exp" / "rejected"
    for content in (b"first", b"second"):
        bad = tmp_path / "data" / "c0" / "00000001_v0_n4.pt"
        bad.parent.mkdir(parents=True, exist_ok=True)
        bad.write_bytes(content)
        where = reject_file(bad, rejected)
        assert where is not None and where.parent == rejected and not bad.exists()
    assert sorted(p.name for p in rejected.iterdir()) == [
        "c0_00000001_v0_n4.pt",
        "c0_00000001_v0_n4.pt.1",
    ]
    assert (rejected / "c0_00000001_v0_n4.pt").read_bytes() == b"first"


def test_remove_temp_files_leaves_complete_files(tmp_path):
    write_policy(tmp_path, 1, {"w": torch.ones(1)})
    stale = tmp_path / ".policy_v00000002.pt.k3j4.tmp"
    stale.write_bytes(b"")  # a writer killed mid-save leaves this
    (tmp_path / "notes.tmp").write_text("not ours: no leading dot")
    assert remove_temp_files(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.tmp", "policy_v00000001.pt"]
    assert remove_temp_files(tmp_path / "missing") == []


def test_wrong_or_corrupt_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="cannot read"):
        read_rollout(bad)
    other = tmp_path / "other.pt"
    torch.save({"x": torch.ones(1)}, other)
    with pytest.raises(CheckpointError, match="not a ding_lite rollout"):
        read_rollout(other)
    with pytest.raises(CheckpointError, match="not a ding_lite policy"):
        read_policy(other)


@pytest.mark.timeout(60)
def test_reader_never_sees_a_partial_policy_file(tmp_path):
    """A writer republishes a large policy while a reader keeps reading the newest file."""
    big = {"w": torch.randn(256, 1024)}
    stop = threading.Event()
    errors = []

    def writer():
        version = 1
        while not stop.is_set():
            write_policy(tmp_path, version, big, keep=2)
            version += 1

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    try:
        while reads < 200:
            versions = policy_versions(tmp_path)
            if not versions:
                continue
            try:
                version, state = read_policy(policy_file(tmp_path, max(versions)))
            except CheckpointError as err:
                if "not found" in str(err):  # pruned between listing and reading: fine
                    continue
                errors.append(err)
                break
            assert state["w"].shape == (256, 1024)
            reads += 1
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not errors
