import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from learner_fakes import VectorPolicy

from ding_lite.utils.errors import CheckpointError
from ding_lite.worker.learner import BaseLearner, latest_checkpoint


def test_properties(tmp_path):
    learner = BaseLearner({}, VectorPolicy(3), exp_name="e", instance_name="lrn", exp_dir=tmp_path)
    assert learner.name == "lrn" and learner.rank == 0 and learner.world_size == 1
    assert learner.last_iter == learner.train_iter == 0
    learner.train(torch.ones(3), envstep=10)
    assert learner.last_iter == 1 and learner.envstep == 10
    assert learner.learn_info == {"policy_loss": 3.0}
    assert learner.priority_info is None  # PPO makes none (DI-engine starts from None too)
    assert learner.last_iter.val == 1 and f"{learner.last_iter:03d}" == "001"
    assert len(learner.log_buffer["train_time"]) == 1 and learner.log_buffer["train_time"][0] > 0
    assert learner.tick_time > 0
    assert learner.load_path == ""
    new = VectorPolicy(3)
    learner.policy = new
    assert learner.policy is new


def test_checkpoints_rotate_and_are_atomic(tmp_path):
    learner = BaseLearner({"keep_ckpts": 2}, VectorPolicy(3), exp_dir=tmp_path)
    for _ in range(5):
        learner.train(torch.ones(3))
        learner.save_checkpoint()
    names = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert names == ["ckpt_iter00000004.pt", "ckpt_iter00000005.pt"]  # no temp files left
    assert latest_checkpoint(tmp_path / "ckpt").name == "ckpt_iter00000005.pt"
    named = learner.save_checkpoint("final")
    assert named.name == "final.pt"


def test_failed_write_leaves_previous_checkpoint(tmp_path, monkeypatch):
    learner = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path)
    learner.train(torch.ones(3))
    path = learner.save_checkpoint("same")
    before = path.read_bytes()

    def broken_save(obj, f):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    learner.train(torch.ones(3))
    with pytest.raises(OSError, match="disk full"):
        learner.save_checkpoint("same")
    assert path.read_bytes() == before
    assert [p.name for p in (tmp_path / "ckpt").iterdir()] == ["same.pt"]


def test_load_errors_are_clear(tmp_path):
    learner = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path)
    with pytest.raises(CheckpointError, match="not found"):
        learner.load_checkpoint(tmp_path / "nope.pt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no checkpoint"):
        learner.load_checkpoint(tmp_path / "empty")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="cannot read"):
        learner.load_checkpoint(corrupt)
    foreign = tmp_path / "foreign.pt"
    torch.save({"w": torch.ones(1)}, foreign)
    with pytest.raises(CheckpointError, match="not a ding_lite checkpoint"):
        learner.load_checkpoint(foreign)
    learner.train(torch.ones(3))
    good = learner.save_checkpoint("good")
    other = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path / "o")
    other.policy.w = torch.zeros(5)
    with pytest.raises(CheckpointError, match="does not fit"):
        other.load_checkpoint(good)


def test_pickle_in_checkpoint_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    bad = tmp_path / "evil.pt"
    torch.save({"format": "ding_lite.ckpt.v1", "x": Evil()}, bad)
    learner = BaseLearner({}, VectorPolicy(3), exp_dir=tmp_path)
    with pytest.raises(CheckpointError, match="cannot read"):
        learner.load_checkpoint(bad)


def test_start_runs_from_get_data_and_checkpoints_on_exception(tmp_path):
    batches = [torch.ones(3), torch.ones(3), ValueError("bad batch")]
    learner = BaseLearner(
        {"hook": {"save_ckpt_after_run": False}},
        VectorPolicy(3),
        exp_dir=tmp_path,
        get_data=lambda: batches.pop(0) if batches else None,
    )
    with pytest.raises(ValueError, match="bad batch"):
        learner.start()
    learner.close()
    assert latest_checkpoint(tmp_path / "ckpt").name == "ckpt_iter00000002.pt"


def test_start_stops_when_data_runs_out(tmp_path):
    batches = [torch.ones(3)] * 3
    learner = BaseLearner(
        {}, VectorPolicy(3), exp_dir=tmp_path, get_data=lambda: batches.pop() if batches else None
    )
    learner.start()
    learner.close()
    assert learner.last_iter == 3
    # save_ckpt_after_run is on by default
    assert latest_checkpoint(tmp_path / "ckpt").name == "ckpt_iter00000003.pt"


@pytest.mark.timeout(60)
def test_sigterm_during_start_leaves_a_checkpoint(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time, torch
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from learner_fakes import VectorPolicy
        from ding_lite.worker.learner import BaseLearner

        def data():
            time.sleep(0.05)
            return torch.ones(3)

        learner = BaseLearner({{"hook": {{"save_ckpt_after_run": False}}}}, VectorPolicy(3),
                              exp_dir={str(tmp_path)!r}, get_data=data)
        print("started", flush=True)
        learner.start()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(0.5)  # a few iterations run (each batch takes 0.05 s)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    ckpt = latest_checkpoint(tmp_path / "ckpt")
    assert ckpt is not None
