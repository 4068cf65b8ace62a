"""The coordinator's side of the task protocol, on scripted workers (no process, no HTTP):
order of tasks, demand, timeouts, stops, the ledger, restarts."""

from __future__ import annotations

import re
import time
from pathlib import Path

from scripted import ROLLOUT, ScriptedSupervisor, ScriptedTransport, run_scripted

from ding_lite.utils import stop


def test_learner_protocol_is_start_then_get_data_before_every_learn_then_close(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3)
    status = run_scripted(tmp_path, transport)
    short = {
        "learner_start_task": "S",
        "learner_get_data_task": "G",
        "learner_learn_task": "L",
        "learner_close_task": "C",
    }
    sequence = "".join(short[n] for n in transport.names("learner0"))
    assert re.fullmatch(r"S(GL)+C", sequence), sequence
    assert sequence.count("L") == 3 and transport.learn_files() == [2, 2, 2]
    assert status.done and status.stop_reason == "max_train_iter"
    assert status.ledger["trained"] == 6


def test_batch_size_comes_from_the_get_data_answer(tmp_path):
    # The start task says 2 rollouts; get_data says 1: each learn task then takes 1 file.
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3, learner_batch=ROLLOUT)
    status = run_scripted(tmp_path, transport)
    assert transport.learn_files() == [1, 1, 1]
    assert status.ledger["dropped_run_end"] >= 1  # the file of the other collector


def test_demand_follows_running_collectors_and_config_errors_are_not_restarted(tmp_path):
    """3 configured collectors: c2 cannot start (a config error), c1 is lost after the first
    iteration and not replaced (no restart left).

    Each collector holds at most one unconsumed file, so a demand of more rollouts than
    the running collectors can provide would stall the run.
    """
    error = "ConfigError: device 'cuda' asked for but CUDA is not available"
    transport = ScriptedTransport(tmp_path, ["c0", "c1", "c2"], iters=4, fail_start={"c2": error})
    supervisor = ScriptedSupervisor(transport, replace=False)

    def lose_c1(t):
        if t.iteration == 1 and "c1" in t.ids["collector"]:
            t.lose("c1")

    transport.after_learn = lose_c1
    status = run_scripted(tmp_path, transport, collectors=3, supervisor=supervisor)
    assert status.stop_reason == "max_train_iter" and status.train_iter == 4
    assert transport.learn_files() == [2, 1, 1, 1]  # c0 + c1, then c0 alone
    # never polled or synced; closed at once, so its process exits
    assert transport.names("c2") == ["collector_start_task", "collector_close_task"]
    assert supervisor.failed == [("c1", "collector")]  # c2 is not handed over: no restart
    assert supervisor.retired == ["c2"]
    assert status.failed_tasks == 1  # the failed start


def test_request_stop_reason_becomes_the_stop_reason(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=100)
    transport.after_learn = lambda t: t.coordinator.request_stop("operator stop")
    status = run_scripted(tmp_path, transport)
    assert status.stop_reason == "operator stop" and status.train_iter == 1
    assert stop.exit_code("operator stop") == 1


def test_task_timeouts_follow_the_config(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=2)
    run_scripted(tmp_path, transport, http_timeout=7, task_timeout=33)
    timeouts = {}
    for call in transport.calls:
        timeouts.setdefault(call.name, set()).add(call.timeout)
    short = {"learner_get_data_task", "collector_data_task", "collector_policy_sync_task"}
    for name, seen in timeouts.items():
        assert seen == ({7.0} if name in short else {33.0}), name


def test_a_done_without_a_reason_ends_as_max_train_iter(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0"], iters=2, done_reason=None)
    status = run_scripted(tmp_path, transport, collectors=1)
    assert status.stop_reason == "max_train_iter" and status.train_iter == 2


def test_files_nobody_reported_are_adopted(tmp_path):
    """c1's data results never name its file (a lost result); the scan adopts the file."""
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3, unreported={"c1"})
    status = run_scripted(tmp_path, transport)
    assert status.train_iter == 3 and status.ledger["trained"] == 6
    assert "c1" in {
        Path(m["path"]).parent.name
        for _, d in transport.sent("learner_learn_task")
        for m in d["files"]
    }


def test_forged_paths_and_evaluations_change_nothing(tmp_path):
    outside = tmp_path / "config.json"  # a file of the run, outside path_data
    outside.write_text("{}")
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3)
    evaluation = {"policy_version": 0, "return_mean": 10.0, "return_std": 0.0}
    evaluation.update(n_episodes=20, solved=True, win_rate=None)  # below 475, "solved" anyway
    transport.extra["c0"] = {"evals": [evaluation]}  # c0 evaluates: judged by its mean
    transport.extra["c1"] = {"evals": [{**evaluation, "return_mean": 1e9}]}  # not asked to
    transport.after_learn = lambda t: t.forged.setdefault("c0", [str(outside), "/etc/passwd"])
    status = run_scripted(tmp_path, transport)  # stop_value 475
    assert not status.solved and status.eval_return == 10.0
    assert status.stop_reason == "max_train_iter" and status.ledger["trained"] == 6
    assert status.failed_tasks == 1  # c1's result with an evaluation: refused whole
    assert outside.read_text() == "{}"  # never handed to the learner, never deleted
    for _, data in transport.sent("learner_learn_task") + transport.sent("learner_close_task"):
        assert str(outside) not in [m["path"] for m in data.get("files", data.get("discard"))]


def test_watchdog_stops_a_stalled_run_naming_what_it_waited_on(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], silent={"c0", "c1"})
    started = time.monotonic()
    status = run_scripted(tmp_path, transport, stall_timeout=0.3)
    assert time.monotonic() - started < 5.0
    assert status.stop_reason == "stalled" and status.train_iter == 0
    assert "waiting on rollouts from c0, c1 (0/64 samples)" in status.stop_detail


def test_no_collector_left_ends_the_run(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=100)
    transport.after_learn = lambda t: t.ids["collector"].clear()
    # No launcher: a lost collector may come back for master_timeout (a cut link).
    started = time.monotonic()
    status = run_scripted(tmp_path, transport, heartbeat_tolerance=0.1, master_timeout=1.5)
    assert 1.5 <= time.monotonic() - started < 10.0
    assert status.stop_reason == "no_collectors" and status.train_iter == 1
    assert "no collector is left" in status.stop_detail
    assert stop.exit_code(status.stop_reason) == 1


def test_a_learner_whose_start_fails_is_dropped_and_the_next_one_started(tmp_path):
    learners = ("learner-forged", "learner0")  # sorted: the forged one is tried first
    fail = {"learner-forged": "could not deliver task: connection refused"}
    transport = ScriptedTransport(tmp_path / "a", ["c0"], learners=learners, fail_start=fail)
    status = run_scripted(tmp_path / "a", transport, collectors=1)
    assert status.stop_reason == "max_train_iter" and transport.names("learner-forged") == [
        "learner_start_task"
    ]
    assert "learner_learn_task" in transport.names("learner0")
    # A config error ends the run at once: every other try would fail the same way.
    fail = {"learner0": "ConfigError: device 'cuda' asked for but CUDA is not available"}
    transport = ScriptedTransport(tmp_path / "b", ["c0"], fail_start=fail)
    started = time.monotonic()
    status = run_scripted(tmp_path / "b", transport, collectors=1)
    assert status.stop_reason == "learner_failed" and time.monotonic() - started < 0.9


def test_a_lost_learner_that_comes_back_is_taken_back_where_it_stands(tmp_path):
    """The issue: a learner whose host was cut off for 40 s was declared lost; when the link
    came back it registered again and was never given work ("no learner started within
    120 s"). Its answer to the batch it trained on while cut off never arrived: taken back
    (``take_back``: it answers where it stands, no restart from the checkpoint), it is sent
    that batch again under the same id and answers as before, so the batch counts once."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "ckpt_iter00000002.pt").write_bytes(b"")
    transport = ScriptedTransport(tmp_path, ["c0"], iters=5, cut_off_at=("learner0", 3))
    status = run_scripted(tmp_path, transport, collectors=1)
    assert status.stop_reason == "max_train_iter" and status.train_iter == 5, status
    starts = transport.sent("learner_start_task")
    assert [w for w, _ in starts] == ["learner0", "learner0"] and starts[1][1]["take_back"]
    batches = [d["batch"] for _, d in transport.sent("learner_learn_task")]
    assert len(batches) == 6 and batches[2] == batches[3]  # the lost answer's batch, again
    assert len(set(batches)) == 5 and status.ledger["trained"] == 5, status.ledger
    assert status.restarts == 0 and status.policy_version == 5


def test_a_lost_learner_is_restarted_from_the_checkpoint(tmp_path):
    """learner0 is lost after iteration 3; its replacement resumes at the checkpoint of
    iteration 2, and every collector is synced back to that version."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "ckpt_iter00000002.pt").write_bytes(b"")
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=5, resume_version=2)
    supervisor = ScriptedSupervisor(transport)

    def lose_learner(t):
        if t.iteration == 3 and "learner0" in t.ids["learner"]:
            t.lose("learner0")

    transport.after_learn = lose_learner
    status = run_scripted(tmp_path, transport, supervisor=supervisor)
    assert supervisor.failed == [("learner0", "learner")] and status.restarts == 1
    assert status.stop_reason == "max_train_iter" and status.train_iter == 5
    (_, start), *_ = transport.sent("learner_start_task")[1:]
    assert start["config"]["learner"]["load_path"] == str(tmp_path / "ckpt")
    assert not start["config"]["learner"]["hook"].get("load_ckpt_before_run")
    rollbacks = [w for w, d in transport.sent("collector_policy_sync_task") if d.get("rollback")]
    assert sorted(rollbacks) == ["c0", "c1"]
    assert transport.names("learner0.r1").count("learner_learn_task") == 3  # iterations 3-5
