"""The rollout ledger: every file ends in exactly one outcome."""

import os
from pathlib import Path

from ding_lite.coordinator.ledger import OUTCOMES, RolloutLedger
from ding_lite.utils.paths import rollout_name


def _write(path_data, collector, seq, version, samples=8):
    path = path_data / collector / rollout_name(seq, version, samples)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return str(path)


def balanced(ledger):
    return ledger["written"] == sum(ledger[k] for k in OUTCOMES)


def test_reported_and_scanned_files_count_once(tmp_path):
    data = tmp_path / "data"
    a = _write(data, "collector0", 0, 1)
    ledger = RolloutLedger(data)
    assert ledger.offer(a) and not ledger.offer(a)
    b = _write(data, "collector1", 0, 1)  # a file nobody reported (its data task was lost)
    assert ledger.adopt() == 1 and ledger.adopt() == 0
    assert ledger.offer(b) is False  # reported late: already adopted
    assert ledger.samples == 16 and ledger.counts["written"] == 2


def test_refuses_paths_outside_path_data_and_odd_names(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    refused = []
    ledger = RolloutLedger(data, on_reject=lambda p, why: refused.append(why))
    outside = tmp_path / "collector0" / rollout_name(0, 0, 8)
    outside.parent.mkdir()
    outside.write_bytes(b"x")
    odd = data / "collector0" / "notes.pt"
    odd.parent.mkdir()
    odd.write_bytes(b"x")
    for path in (str(outside), str(data / ".." / "collector0" / outside.name), str(odd), 42):
        assert not ledger.offer(path)
    assert ledger.offer(str(data / "collector0" / rollout_name(5, 0, 8))) is False  # no file
    assert len(refused) == 5 and ledger.counts["written"] == 0
    assert outside.exists() and odd.exists()  # nothing touched


def test_take_prefers_fresh_rollouts_and_hands_stale_ones_along(tmp_path):
    data = tmp_path / "data"
    old = _write(data, "c", 0, 1)
    new = [_write(data, "c", i, 5) for i in (1, 2, 3)]
    ledger = RolloutLedger(data)
    ledger.adopt()
    handed = [m["path"] for m in ledger.take(demand=16, min_version=3)]
    # two fresh files make the 16 samples; the stale one rides along for the learner to drop
    assert old in handed and len(set(handed) & set(new)) == 2 and len(handed) == 3
    assert ledger.samples == 8


def test_settle_books_each_outcome_and_gives_back_the_unnamed(tmp_path):
    data = tmp_path / "data"
    paths = [_write(data, "c", i, 2) for i in range(4)]
    ledger = RolloutLedger(data)
    ledger.adopt()
    ledger.take(demand=10**6, min_version=0)
    os.unlink(paths[0])  # the learner consumed the trained one
    os.unlink(paths[1])
    ledger.settle({"trained": [paths[0]], "dropped_stale": [paths[1]]})
    # paths[2] and [3] were not named and still exist: waiting again
    assert ledger.counts["trained"] == 1 and ledger.counts["dropped_stale"] == 1
    assert ledger.samples == 16
    ledger.discard_rest()
    counts = ledger.ledger()
    assert counts["dropped_run_end"] == 2 and counts["left_in_path_data"] == 0 and balanced(counts)


def test_give_back_after_a_lost_learner(tmp_path):
    data = tmp_path / "data"
    paths = [_write(data, "c", i, 2) for i in range(3)]
    ledger = RolloutLedger(data)
    ledger.adopt()
    ledger.take(demand=10**6, min_version=0)
    os.unlink(paths[0])  # read by the learner that died: its iteration is lost
    ledger.give_back()
    assert ledger.counts["dropped_rollback"] == 1 and ledger.samples == 16
    ledger.discard_rest()
    assert balanced(ledger.ledger()) and not any(os.path.exists(p) for p in paths)


def test_dropped_samples_count_the_files_dropped_before_the_run_end(tmp_path):
    data = tmp_path / "data"
    paths = [_write(data, "collector0", i, 0, samples=8 * (i + 1)) for i in range(4)]
    ledger = RolloutLedger(data)
    ledger.offer_all(paths)
    ledger.take(1000, 0)
    for path in paths[1:]:
        os.unlink(path)  # the learner consumed them
    ledger.settle(
        {
            "trained": [paths[1]],
            "dropped_stale": [paths[2]],
            "dropped_invalid": [paths[3]],
            "dropped_run_end": [paths[0]],
        }
    )
    assert ledger.dropped_samples == 24 + 32  # stale and invalid; trained and run end not


def test_symlinks_in_path_data_are_counted_once_as_rejected_and_never_followed(tmp_path):
    """Issue 25: a symlink found in the data path was ignored silently."""
    data, outside = tmp_path / "data", tmp_path / "outside"
    (data / "c0").mkdir(parents=True)
    outside.mkdir()
    (outside / "00000000_v0_n4.pt").write_bytes(b"x")
    (data / "c0" / "00000001_v0_n4.pt").symlink_to(outside / "00000000_v0_n4.pt")
    (data / "c9").symlink_to(outside)  # a linked collector folder
    refused = []
    ledger = RolloutLedger(data, on_reject=lambda path, why: refused.append((path, why)))
    assert ledger.adopt() == 0 and ledger.adopt() == 0
    assert ledger.counts["rejected_links"] == 2 and ledger.counts["written"] == 0
    assert sorted(Path(p).name for p, _ in refused) == ["00000001_v0_n4.pt", "c9"]
    assert all("symbolic link" in why for _, why in refused)
    restored = RolloutLedger(data)
    restored.restore(ledger.state())
    restored.adopt()
    assert restored.counts["rejected_links"] == 2  # a restarted coordinator counts none again
