"""A coordinator taken back from the state a killed one saved (issue 25), in-process.

The workers are real (a learner and two collectors called through an in-process transport)
and outlive the first coordinator, as they do when its process is killed. The first one
"dies" after an iteration, at a point where its last save did or did not happen; the
second takes the run back from ``coordinator_state.json`` and finishes it.
"""

from __future__ import annotations

import json

import pytest
from helpers import tiny_cfg
from scripted import ScriptedTransport, make_workers

from ding_lite.coordinator import Coordinator
from ding_lite.coordinator.recovery import FORMAT, RECOVERY_FILE, RecoveryError, RecoveryFile
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.paths import ckpt_name
from ding_lite.worker.learner.learner_hook import hooks_with_load_path


class Killed(BaseException):
    """The first coordinator's end: nothing of its own clean-up runs."""


class RestorableTransport(ScriptedTransport):
    def restore_workers(self, workers):
        self.restored = list(workers)


def _first_run(tmp_path, kill_at_iteration: int, skip_last_save: bool):
    workers = make_workers(2)
    transport = RestorableTransport.of_workers(tmp_path, workers)
    file = RecoveryFile(tmp_path)
    first = Coordinator(tiny_cfg(tmp_path), transport, recovery=file)

    def die(status):
        if status.train_iter == kill_at_iteration:
            raise Killed

    if skip_last_save:  # killed before the save after the learner's answer landed
        original = file.save

        def save(saved, kind):
            if kind == "settle" and saved["status"]["train_iter"] == kill_at_iteration:
                return
            original(saved, kind)

        file.save = save
    first.on_status = die
    first._close = lambda: None  # killed: no close
    with pytest.raises(Killed):
        first.run(10)
    return workers, transport


@pytest.mark.timeout(120)
@pytest.mark.parametrize("skip_last_save", [False, True])
def test_a_second_coordinator_takes_the_run_back_and_finishes_it(tmp_path, skip_last_save):
    workers, transport = _first_run(tmp_path, 3, skip_last_save)
    state = RecoveryFile(tmp_path).load()
    assert state["learner"] == "learner0" and state["phase"] == "running"
    second = Coordinator(tiny_cfg(tmp_path), transport, recovery=RecoveryFile(tmp_path))
    second.restore(state)
    assert sorted(w[0] for w in transport.restored) == ["collector0", "collector1", "learner0"]
    calls = len(transport.calls)
    status = second.run(10)
    assert status.train_iter == 6 and status.stop_reason == "max_train_iter"
    assert status.coordinator_restarts == 1 and status.failed_tasks == 0
    sent = [call.name for call in transport.calls[calls:]]
    # Taken back: no start task for anyone, the learner trained 6 iterations in all.
    assert "learner_start_task" not in sent and "collector_start_task" not in sent
    ledger = status.ledger
    accounted = sum(v for k, v in ledger.items() if k == "trained" or k.startswith("dropped_"))
    assert ledger["written"] == accounted and ledger["left_in_path_data"] == 0
    assert ledger["dropped_invalid"] == ledger["dropped_rollback"] == 0
    files = sum(w._async.files_written for r, w in workers.values() if r == "collector")
    assert ledger["written"] == files  # every file written counted once
    if skip_last_save:  # the batch of iteration 3 was sent again and answered from memory
        assert sent.count("learner_learn_task") == 4
    for _, worker in workers.values():
        worker.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s["ledger"]["waiting"].append({"path": "/etc/passwd"}),
        lambda s: s.update(learner="../x"),
        lambda s: s.update(policy=["/tmp/elsewhere/policy_v00000001.pt", 1, 0.0]),
        lambda s: s["ledger"]["counts"].update(trained=-1),
        lambda s: s.update(workers=[["c0", "collector", "not an address"]]),
        lambda s: s.pop("status"),
    ],
    ids=["path-outside", "bad-id", "policy-outside", "negative-count", "bad-address", "missing"],
)
def test_a_damaged_state_is_refused_and_changes_nothing(tmp_path, damage):
    cfg = tiny_cfg(tmp_path)
    transport = RestorableTransport(tmp_path, learners=())
    saved = Coordinator(cfg, transport, recovery=RecoveryFile(tmp_path))
    saved.save("start")
    state = json.loads((tmp_path / RECOVERY_FILE).read_text())
    damage(state)
    fresh = Coordinator(cfg, transport, recovery=RecoveryFile(tmp_path))
    before = (fresh.state.to_json(), fresh.rollouts.state(), fresh.status)
    with pytest.raises(RecoveryError) as refused:
        fresh.restore(state)
    assert "\n" not in str(refused.value)  # one line
    assert (fresh.state.to_json(), fresh.rollouts.state(), fresh.status) == before
    assert not fresh.restored and not hasattr(transport, "restored")


def test_a_file_that_is_not_a_state_is_refused(tmp_path):
    (tmp_path / RECOVERY_FILE).write_text("{not json")
    with pytest.raises(RecoveryError, match="not JSON"):
        RecoveryFile(tmp_path).load()
    for other in (99, FORMAT - 1):  # a file of another format (an older ding_lite's)
        (tmp_path / RECOVERY_FILE).write_text(f'{{"format": {other}}}')
        with pytest.raises(RecoveryError, match=f"not a coordinator state of format {FORMAT}$"):
            RecoveryFile(tmp_path).load()
    assert RecoveryFile(tmp_path / "nowhere").load() is None


@pytest.mark.parametrize("first_load", ["", "/elsewhere/warm_start.pt"])
def test_a_resumed_learner_is_told_the_runs_checkpoint_in_load_path(tmp_path, first_load):
    """The run's checkpoint replaces what the config's first start loaded (if anything),
    and the learner's own merge of ``load_path`` into its hooks accepts it."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / ckpt_name(2)).write_bytes(b"")
    cfg = tiny_cfg(tmp_path, f"learner.hook.load_ckpt_before_run={first_load}")
    transport = ScriptedTransport(tmp_path, fail_start={"learner0": "ConfigError: enough"})
    assert not Coordinator(cfg, transport).learner_link.connect(resume=True)
    ((_, start),) = transport.sent("learner_start_task")
    learner = start["config"]["learner"]
    assert learner["load_path"] == str(tmp_path / "ckpt")
    assert hooks_with_load_path(learner)["load_ckpt_before_run"] == str(tmp_path / "ckpt")


def test_a_learner_given_two_checkpoints_refuses_unless_they_are_one():
    same = {"load_path": "a.pt", "hook": {"load_ckpt_before_run": "a.pt"}}
    assert hooks_with_load_path(same)["load_ckpt_before_run"] == "a.pt"
    with pytest.raises(ConfigError, match="name different checkpoints"):
        hooks_with_load_path({"load_path": "a.pt", "hook": {"load_ckpt_before_run": "b.pt"}})
