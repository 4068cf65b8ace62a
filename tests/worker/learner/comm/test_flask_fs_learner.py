"""FlaskFileSystemLearner driven through its task handlers (no transport): which files it
touches, how it sorts them, how it reports a dead or stopped training thread, and resume."""

import errno
import json
from pathlib import Path

import pytest
import torch

import ding_lite
from ding_lite.config import compile_config
from ding_lite.data import policy_file, policy_versions, write_rollout
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.paths import UnsafePathError, scan_rollouts
from ding_lite.worker.learner.comm import FlaskFileSystemLearner
from ding_lite.worker.learner.learner_hook import LearnerHook, register_learner_hook

N = 64  # samples per rollout: 16 steps x 4 envs, one collector


@register_learner_hook("test_comm_fault", force=True)
class FaultHook(LearnerHook):
    """Injects a fault in iteration ``at_iter``: an exception, or a divergence stop."""

    def __init__(self, name, priority=None, *, position, at_iter, fault):
        super().__init__(name, priority, position=position)
        self.at_iter, self.fault = at_iter, fault

    def __call__(self, engine):
        current = engine.train_iter + (1 if self.position == "before_iter" else 0)
        if current != self.at_iter:
            return
        if self.fault == "enospc":
            raise OSError(errno.ENOSPC, "No space left on device", "/run/ckpt/x.pt")
        if self.fault == "runtime":
            raise RuntimeError("boom\nsecond line")
        engine.request_stop(self.fault)


def make_cfg(tmp_path, *overrides, hooks=None, **top):
    cfg = compile_config(
        "cartpole_ppo",
        [
            "env.num_envs=4",
            "policy.collect.n_steps=16",
            "policy.learn.batch_size=32",
            "policy.learn.n_epochs=1",
            "system.collectors=1",
            "system.task_timeout=60",
            "learner.hook.log_show_after_iter=0",
            *overrides,
        ],
        exp_dir=str(tmp_path / "run"),
        **top,
    )
    if hooks:
        cfg.learner.hook.update(hooks)
    return cfg


@pytest.fixture
def start(tmp_path):
    started = []

    def _start(*overrides, hooks=None, **top):
        cfg = make_cfg(tmp_path, *overrides, hooks=hooks, **top)
        learner = FlaskFileSystemLearner(worker_id="learner0")
        result = learner.start_task({"config": dict(cfg)})
        started.append(learner)
        return learner, result

    yield _start
    for learner in started:
        learner.close()


def samples(n=N, **changes):
    data = {
        "obs": torch.randn(n, 4),
        "action": torch.randint(0, 2, (n,)),
        "logp": torch.full((n,), -0.69),
        "value": torch.zeros(n),
        "reward": torch.randn(n),
        "next_value": torch.zeros(n),
        "terminated": torch.zeros(n, dtype=torch.bool),
        "done": torch.rand(n) < 0.05,
    }
    data.update(changes)
    return data


def rollout(tmp_path, seq, version=0, collector="c0", **changes):
    return write_rollout(
        tmp_path / "run" / "data", collector, seq, samples(**changes), policy_version=version
    )


def outcome_lists(info):
    return {k: info[k] for k in ("trained", "dropped_stale", "dropped_invalid", "dropped_rollback")}


@pytest.mark.timeout(120)
def test_forged_paths_fail_the_task_and_touch_nothing(tmp_path, start):
    learner, _ = start()
    run = tmp_path / "run"
    config_json = run / "config.json"
    config_json.write_text(json.dumps({"exp_name": "x"}))
    sentinel = tmp_path / "sentinel.pt"  # a well-formed rollout, but outside path_data
    torch.save({"format": "ding_lite.rollout.v1", "data": samples()}, sentinel)
    good = rollout(tmp_path, 0)
    link = run / "data" / "c0" / "00000005_v0_n64.pt"
    link.symlink_to(sentinel)
    forged = [
        str(sentinel),
        str(run / "data" / "c0" / ".." / ".." / "config.json"),
        str(link),
        str(run / "data"),
        None,
    ]
    for path in forged:
        with pytest.raises(UnsafePathError):
            learner.learn_task({"files": [good, {"path": path}], "envstep": N})
        with pytest.raises(UnsafePathError):  # the check comes before any file is read
            learner.close_task({"discard": [good, {"path": path}]})
    with pytest.raises(UnsafePathError, match="must be a list"):
        learner.learn_task({"files": "x", "envstep": N})
    assert sentinel.is_file() and config_json.is_file() and Path(good["path"]).is_file()
    assert link.is_symlink() and not (run / "rejected").exists()
    assert learner.get_data_task({})["iteration"] == 0
    info = learner.learn_task({"files": [good], "envstep": N})  # the learner is unharmed
    assert info["trained"] == [good["path"]] and info["iteration"] == 1


@pytest.mark.timeout(120)
def test_bad_files_are_moved_aside_while_good_ones_train(tmp_path, start):
    learner, _ = start()
    data = tmp_path / "run" / "data"
    good = [rollout(tmp_path, 0, collector="c0")["path"], rollout(tmp_path, 0, collector="c1")]
    good[1] = good[1]["path"]
    wrong_shape = rollout(tmp_path, 1, obs=torch.randn(N, 5))["path"]
    garbage = data / "c1" / "00000001_v0_n64.pt"
    garbage.write_bytes(b"not a tensor file")
    short = rollout(tmp_path, 2, collector="c1")["path"]
    lying = Path(short).with_name("00000002_v0_n128.pt")  # the name says 128 samples
    Path(short).rename(lying)
    nan = rollout(tmp_path, 3, reward=torch.full((N,), float("nan")))["path"]
    gone = str(data / "c0" / "00000009_v0_n64.pt")
    folder = data / "c0" / "00000010_v0_n64.pt"
    folder.mkdir()
    bad = [wrong_shape, str(garbage), str(lying), nan, gone, str(folder)]
    files = [good[0], *bad[:3], {"path": good[1]}, *bad[3:], good[0]]  # good[0] named twice
    info = learner.learn_task({"files": files, "envstep": 2 * N})
    assert outcome_lists(info) == {
        "trained": good,
        "dropped_stale": [],
        "dropped_invalid": bad,
        "dropped_rollback": [],
    }
    assert info["dropped"] == len(bad) and info["iteration"] == 1 and info["policy_lag"] == 0
    assert info["stop_reason"] is None and info["error"] == ""
    assert info["policy_path"] == str(policy_file(tmp_path / "run" / "policy", 1))
    assert scan_rollouts(data) == [] and folder.is_dir()
    rejected = sorted(p.name for p in (tmp_path / "run" / "rejected").iterdir())
    assert rejected == [
        "c0_00000001_v0_n64.pt",
        "c0_00000003_v0_n64.pt",
        "c1_00000001_v0_n64.pt",
        "c1_00000002_v0_n128.pt",
    ]


@pytest.mark.timeout(120)
def test_stale_and_rolled_back_rollouts_are_sorted_out(tmp_path, start):
    learner, _ = start("system.max_policy_lag=1")
    for version in (0, 1):
        info = learner.learn_task({"files": [rollout(tmp_path, version, version)]})
        assert info["iteration"] == version + 1
    files = [rollout(tmp_path, 10 + v, v)["path"] for v in (0, 1, 2, 5)]
    info = learner.learn_task({"files": files, "envstep": 6 * N})
    assert outcome_lists(info) == {
        "trained": files[1:3],
        "dropped_stale": files[:1],
        "dropped_invalid": [],
        "dropped_rollback": files[3:],
    }
    assert info["dropped"] == 2 and info["policy_lag"] == 0.5 and info["iteration"] == 3
    assert scan_rollouts(tmp_path / "run" / "data") == []
    # Nothing left to train on: no iteration, no new policy.
    info = learner.learn_task({"files": [rollout(tmp_path, 20, 0)["path"]]})
    assert info["trained"] == [] and info["iteration"] == 3 and info["policy_path"] == ""


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "fault,stop_reason,error",
    [
        ("enospc", "disk_full", "OSError: [Errno 28] No space left on device"),
        ("runtime", "learner_failed", "RuntimeError: boom"),
    ],
)
def test_a_dead_training_thread_is_reported_not_raised(tmp_path, start, fault, stop_reason, error):
    hook = {"type": "test_comm_fault", "position": "before_iter"}
    learner, _ = start(hooks={"fault": {**hook, "ext_args": {"at_iter": 2, "fault": fault}}})
    assert learner.learn_task({"files": [rollout(tmp_path, 0)]})["stop_reason"] is None
    lost = rollout(tmp_path, 1, 1)["path"]
    info = learner.learn_task({"files": [lost]})
    assert info["stop_reason"] == stop_reason and info["error"].startswith(error)
    assert "\n" not in info["error"] and info["done"] is False
    # The failed iteration consumed its file: the run rolls back to a checkpoint.
    assert info["trained"] == [] and info["dropped_rollback"] == [lost]
    assert info["iteration"] == 1
    state = learner.get_data_task({})
    assert (state["stop_reason"], state["error"]) == (stop_reason, info["error"])
    untouched = rollout(tmp_path, 2, 1)["path"]
    info = learner.learn_task({"files": [untouched]})
    assert info["stop_reason"] == stop_reason and Path(untouched).is_file()
    assert not any(outcome_lists(info).values())  # not consumed: the coordinator keeps it
    closed = learner.close_task({"discard": [{"path": untouched}]})
    assert closed["dropped_run_end"] == [untouched] and not Path(untouched).exists()
    assert closed["stop_reason"] == stop_reason


@pytest.mark.timeout(120)
def test_a_diverged_learner_says_done_and_stops_taking_files(tmp_path, start):
    fault = {"type": "test_comm_fault", "position": "after_iter"}
    learner, _ = start(hooks={"fault": {**fault, "ext_args": {"at_iter": 2, "fault": "diverged"}}})
    info = learner.learn_task({"files": [rollout(tmp_path, 0)]})
    assert not info["done"] and info["done_reason"] is None
    last = rollout(tmp_path, 1, 1)["path"]
    info = learner.learn_task({"files": [last]})
    assert info["trained"] == [last] and info["iteration"] == 2  # the iteration itself ran
    assert info["done"] and info["done_reason"] == "diverged"
    assert info["stop_reason"] == "diverged"
    assert learner.get_data_task({})["stop_reason"] == "diverged"
    kept = rollout(tmp_path, 2, 2)["path"]
    info = learner.learn_task({"files": [kept]})
    assert info["done_reason"] == "diverged" and info["trained"] == [] and Path(kept).is_file()


@pytest.mark.timeout(120)
def test_limits_still_end_the_run(tmp_path, start):
    learner, _ = start(max_train_iter=1)
    info = learner.learn_task({"files": [rollout(tmp_path, 0)], "envstep": N})
    assert info["done"] and info["done_reason"] == "max_train_iter"
    assert info["stop_reason"] is None


@pytest.mark.timeout(120)
def test_resume_removes_policies_newer_than_the_checkpoint(tmp_path, start):
    over = ("learner.hook.save_ckpt_after_iter=3", "learner.hook.save_ckpt_after_run=false")
    first, result = start(*over)
    assert result["resumed_from"] is None and result["policy_version"] == 0
    for seq in range(5):
        first.learn_task({"files": [rollout(tmp_path, seq, seq)], "envstep": (seq + 1) * N})
    first.close_task({})
    path_policy = tmp_path / "run" / "policy"
    assert sorted(policy_versions(path_policy)) == [3, 4, 5]
    left = [rollout(tmp_path, 10 + v, v, collector="c1")["path"] for v in (3, 4, 5)]

    ckpt = str(tmp_path / "run" / "ckpt")
    second, result = start(*over, f"learner.hook.load_ckpt_before_run={ckpt}")
    assert result["resumed_from"] == 3 and result["policy_version"] == 3
    assert result["checkpoint"] == "ckpt_iter00000003.pt"
    assert result["policy_path"] == str(policy_file(path_policy, 3))
    assert sorted(policy_versions(path_policy)) == [3]
    assert result["envstep"] == 3 * N
    info = second.learn_task({"files": left})
    assert info["trained"] == left[:1] and info["dropped_rollback"] == left[1:]
    assert sorted(policy_versions(path_policy)) == [3, 4]


@pytest.mark.timeout(120)
def test_close_discards_the_named_files_only(tmp_path, start):
    learner, _ = start()
    discard = [rollout(tmp_path, 0), rollout(tmp_path, 1, collector="c1")]
    keep = rollout(tmp_path, 2)
    gone = {"path": str(tmp_path / "run" / "data" / "c0" / "00000007_v0_n64.pt")}
    result = learner.close_task({"discard": [*discard, gone]})
    assert result["dropped_run_end"] == [m["path"] for m in discard] + [gone["path"]]
    assert [m["path"] for m in scan_rollouts(tmp_path / "run" / "data")] == [keep["path"]]
    assert result["iteration"] == 0 and learner.closed.is_set()


def test_tasks_before_start_and_malformed_fields(tmp_path, start):
    idle = FlaskFileSystemLearner()
    with pytest.raises(DingLiteError, match="not started"):
        idle.learn_task({"files": []})
    with pytest.raises(UnsafePathError, match="not started"):
        idle.close_task({"discard": [{"path": "/etc/passwd"}]})
    assert idle.close_task({})["dropped_run_end"] == []
    learner, _ = start()
    good = rollout(tmp_path, 0)
    for envstep in ("64", -1, True, 1.5):
        with pytest.raises(ValueError, match="envstep"):
            learner.learn_task({"files": [good], "envstep": envstep})
    assert Path(good["path"]).is_file()


@pytest.mark.timeout(120)
def test_best_checkpoint_from_reported_evaluations(tmp_path, start):
    learner, _ = start("system.keep_policies=2")
    best_pt = tmp_path / "run" / "ckpt" / "best.pt"
    good = rollout(tmp_path, 0)
    for bad in ({"policy_version": -1, "return_mean": 1.0}, {"policy_version": 0}, "v0"):
        with pytest.raises(ValueError, match="best"):
            learner.learn_task({"files": [good], "best": bad})
    assert Path(good["path"]).is_file() and not best_pt.exists()  # nothing touched

    info = learner.learn_task({"files": [good], "best": {"policy_version": 0, "return_mean": 20}})
    assert info["best"] == {"policy_version": 0, "return_mean": 20.0}
    assert ding_lite.load_policy(tmp_path / "run").train_iter == 0
    for seq in (1, 2):  # versions 2 and 3 are kept; 0 and 1 are pruned
        learner.learn_task({"files": [rollout(tmp_path, seq, seq)]})
    worse = learner.learn_task({"files": [], "best": {"policy_version": 2, "return_mean": 5}})
    assert worse["best"]["policy_version"] == 0  # not better: best.pt unchanged
    gone = learner.learn_task({"files": [], "best": {"policy_version": 1, "return_mean": 30}})
    assert gone["best"]["policy_version"] == 0  # version 1 is no longer held
    closed = learner.close_task({"best": {"policy_version": 3, "return_mean": 25.5}})
    assert closed["best"] == {"policy_version": 3, "return_mean": 25.5}
    policy = ding_lite.load_policy(best_pt)
    assert policy.train_iter == 3 and policy.predict(torch.zeros(4)).shape == ()


@pytest.mark.timeout(120)
def test_a_learner_is_taken_back_where_it_stands_and_fenced_by_batch_id(tmp_path, start):
    """A coordinator that lost this learner (a cut link) asks it to start with ``take_back``
    and its resume config: it answers where its training stands (``running``), and a batch
    it trained on already gets its first answer again, with no second update. Another run's
    config, or no ``take_back``, is still refused."""
    learner, first = start()
    assert first["running"] is False
    config = learner._started_with["config"]
    info = learner.learn_task({"files": [rollout(tmp_path, 0)], "envstep": N, "batch": "b1"})
    assert info["iteration"] == 1
    resume = {**config, "learner": {**config["learner"], "load_path": str(tmp_path / "ckpt")}}
    back = learner.start_task({"config": resume, "take_back": True})
    assert back["running"] is True and back["policy_version"] == 1
    assert back["policy_path"] == info["policy_path"]
    again = learner.learn_task({"files": [rollout(tmp_path, 1)], "envstep": N, "batch": "b1"})
    assert again == info and learner.get_data_task({})["iteration"] == 1
    with pytest.raises(DingLiteError, match="already started"):
        learner.start_task({"config": resume})
    with pytest.raises(DingLiteError, match="already started"):
        learner.start_task({"config": {**config, "seed": 99}, "take_back": True})
