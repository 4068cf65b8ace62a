import threading

import pytest
import torch

from ding_lite.data import (
    policy_file,
    policy_versions,
    read_policy,
    read_rollout,
    write_policy,
    write_rollout,
)
from ding_lite.utils.errors import CheckpointError


def test_rollout_round_trip(tmp_path):
    data = {"obs": torch.randn(8, 4), "action": torch.randint(0, 2, (8,))}
    meta = write_rollout(tmp_path, "c0", 3, data, policy_version=7, episode_returns=[1.0, 2.0])
    assert meta["size"] == 8 and meta["policy_version"] == 7 and meta["seq"] == 3
    assert meta["path"].endswith("c0/00000003.pt")
    content = read_rollout(meta["path"])
    assert torch.equal(content["data"]["obs"], data["obs"])
    assert content["episode_returns"] == [1.0, 2.0]
    assert [p.name for p in (tmp_path / "c0").iterdir()] == ["00000003.pt"]  # no temp files


def test_policy_publish_prunes_old_versions(tmp_path):
    state = {"w": torch.ones(3)}
    for version in range(1, 6):
        write_policy(tmp_path, version, state, keep=2)
    assert sorted(policy_versions(tmp_path)) == [4, 5]
    version, loaded = read_policy(policy_file(tmp_path, 5))
    assert version == 5 and torch.equal(loaded["w"], state["w"])


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
