"""The task protocol end to end, in one process: handlers are called directly."""

import time
from pathlib import Path

import pytest
from helpers import tiny_cfg
from scripted import ScriptedTransport, make_workers

from ding_lite.coordinator import Coordinator
from ding_lite.coordinator.collectors import MAX_DATA_FAILURES
from ding_lite.data import policy_versions
from ding_lite.worker.learner.comm import FlaskFileSystemLearner


@pytest.mark.timeout(120)
def test_protocol_runs_to_the_iteration_limit_and_cleans_up(tmp_path):
    workers = make_workers(2)
    transport = ScriptedTransport.of_workers(tmp_path, workers)
    statuses = []
    status = Coordinator(tiny_cfg(tmp_path), transport, on_status=statuses.append).run(10)
    assert status.train_iter == 6 and status.done and status.stop_reason == "max_train_iter"
    assert status.policy_version == 6 and status.failed_tasks == 0
    assert status.envstep >= 6 * 64
    assert status.eval_return is not None  # the first collector evaluated v2, v4, v6
    assert sorted(policy_versions(tmp_path / "policy")) == [4, 5, 6]  # keep_policies=3
    assert not list((tmp_path / "data").rglob("*.pt"))  # every rollout file consumed/deleted
    assert (tmp_path / "ckpt").is_dir()  # the learner saved its checkpoint at the end
    names = transport.names()
    assert names[0] == "learner_start_task" and names.count("learner_learn_task") == 6
    assert names.count("collector_policy_sync_task") == 12  # 6 versions x 2 collectors
    assert names[-1] == "learner_close_task"
    for _, worker in workers.values():
        worker.close()


@pytest.mark.timeout(120)
def test_a_lost_collector_is_dropped_and_the_run_goes_on(tmp_path):
    workers = make_workers(2)
    transport = ScriptedTransport.of_workers(tmp_path, workers)

    mark = {}

    def lose_one(status):
        if status.train_iter == 2:
            transport.lose("collector1")
            workers["collector1"][1].close()
            mark["calls"] = len(transport.calls)

    status = Coordinator(tiny_cfg(tmp_path), transport, on_status=lose_one).run(10)
    assert status.train_iter == 6 and status.collectors_alive == 1
    assert all(call.worker != "collector1" for call in transport.calls[mark["calls"] :])
    for _, worker in workers.values():
        worker.close()


@pytest.mark.timeout(120)
def test_a_failing_task_is_reported_and_the_run_carries_on(tmp_path):
    workers = make_workers(1)
    collector = workers["collector0"][1]
    real = collector.data_task
    calls = {"n": 0}

    def flaky(data):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk hiccup")
        return real(data)

    collector.data_task = flaky
    transport = ScriptedTransport.of_workers(tmp_path, workers)
    start = time.monotonic()
    status = Coordinator(tiny_cfg(tmp_path), transport).run(10)
    assert status.failed_tasks == 1 and status.train_iter == 6
    assert time.monotonic() - start < 60
    for _, worker in workers.values():
        worker.close()


@pytest.mark.timeout(60)
def test_stale_rollouts_are_dropped_and_counted(tmp_path):
    workers = make_workers(1)
    transport = ScriptedTransport.of_workers(tmp_path, workers)
    cfg = tiny_cfg(tmp_path, "system.max_policy_lag=0")
    status = Coordinator(cfg, transport).run(10)
    # with lag 0 only rollouts of the current version are trained on; older ones are dropped
    assert status.train_iter == 6 and status.dropped >= 1
    assert not list((tmp_path / "data").rglob("*.pt"))
    for _, worker in workers.values():
        worker.close()


@pytest.mark.timeout(120)
def test_a_collector_that_keeps_failing_is_dropped(tmp_path):
    """Its process still answers (heartbeats) but its loop crashed: it must not stall the run."""
    workers = make_workers(2)
    broken = workers["collector1"][1]
    real = broken.data_task
    calls = {"n": 0}

    def crashes_after_two(data):
        calls["n"] += 1
        if calls["n"] > 2:
            raise RuntimeError("collector collector1 failed: env exploded")
        return real(data)

    broken.data_task = crashes_after_two
    transport = ScriptedTransport.of_workers(tmp_path, workers)
    status = Coordinator(tiny_cfg(tmp_path), transport).run(10)
    assert status.train_iter == 6 and status.failed_tasks >= 3
    data_calls = [w for w, _ in transport.sent("collector_data_task")]
    # dropped after MAX_DATA_FAILURES failures in a row (nobody restarts it here)
    assert data_calls.count("collector1") == 2 + MAX_DATA_FAILURES
    for _, worker in workers.values():
        worker.close()


def test_learner_skips_an_unreadable_rollout_file(tmp_path):
    import torch

    from ding_lite.data import write_rollout

    learner = FlaskFileSystemLearner(worker_id="learner0")
    cfg = tiny_cfg(tmp_path)
    learner.start_task({"config": dict(cfg)})
    try:
        data = {
            "obs": torch.zeros(64, 4),
            "action": torch.zeros(64, dtype=torch.long),
            "logp": torch.zeros(64),
            "value": torch.zeros(64),
            "reward": torch.ones(64),
            "next_value": torch.zeros(64),
            "terminated": torch.zeros(64, dtype=torch.bool),
            "done": torch.zeros(64, dtype=torch.bool),
        }
        good = write_rollout(tmp_path / "data", "c0", 0, data, policy_version=0)
        bad = dict(good, path=str(tmp_path / "data" / "c0" / "broken.pt"))
        Path(bad["path"]).write_bytes(b"not a tensor file")
        info = learner.learn_task({"files": [bad, good], "envstep": 64})
        assert info["trained"] and info["dropped"] == 1 and info["iteration"] == 1
        assert not list((tmp_path / "data" / "c0").iterdir())
    finally:
        learner.close_task({})


def test_the_solving_evaluation_stays_the_runs_figure(tmp_path):
    cfg = tiny_cfg(tmp_path, "evaluator.stop_value=475")
    coordinator = Coordinator(cfg, ScriptedTransport.of_workers(tmp_path, {}))
    coordinator.status.policy_version = 8
    coordinator.state.evaluator = "collector0"

    def report(version, ret, solved):
        evals = [dict(policy_version=version, return_mean=ret, n_episodes=2, solved=solved)]
        coordinator.collectors.take_output("collector0", {"files": [], "evals": evals})

    report(4, 120.0, False)
    assert coordinator.status.eval_return == 120.0 and not coordinator.status.solved
    report(6, 490.0, True)
    report(8, 393.5, False)  # e.g. one more evaluation that arrives while the run closes
    assert coordinator.status.solved and coordinator.status.eval_return == 490.0


def test_a_forged_evaluation_cannot_solve_the_run(tmp_path):
    from ding_lite.coordinator.checks import ResultError

    cfg = tiny_cfg(tmp_path, "evaluator.stop_value=475")
    coordinator = Coordinator(cfg, ScriptedTransport.of_workers(tmp_path, {}))
    coordinator.status.policy_version = 3
    coordinator.state.evaluator = "collector0"
    take = coordinator.collectors.take_output
    with pytest.raises(ResultError):  # only the evaluating collector reports evaluations
        take("collector1", {"evals": [dict(policy_version=2, return_mean=500.0, n_episodes=2)]})
    forged = [
        dict(policy_version=9, return_mean=500.0, n_episodes=2),  # a version not published
        dict(policy_version=2, return_mean=500.0, n_episodes=1),  # too few episodes
        dict(policy_version=2, return_mean=float("inf"), n_episodes=2),
        dict(policy_version="2", return_mean=500.0, n_episodes=2),
    ]
    take("collector0", {"files": [], "evals": forged})
    assert not coordinator.status.solved and coordinator.status.eval_return is None
    # the solved flag is judged by the coordinator, whatever the report claims
    take(
        "collector0",
        {"evals": [dict(policy_version=2, return_mean=10.0, n_episodes=2, solved=True)]},
    )
    assert not coordinator.status.solved and coordinator.status.eval_return == 10.0


def test_an_evaluation_counts_every_agents_episode_of_every_copy(tmp_path):
    cfg = tiny_cfg(tmp_path)  # evaluator.n_episodes=2: two env copies
    coordinator = Coordinator(cfg, ScriptedTransport.of_workers(tmp_path, {}))
    coordinator.status.policy_version = 3
    coordinator.state.evaluator = "collector0"

    def report(ret, n_episodes, **more):
        evals = [dict(policy_version=3, return_mean=ret, n_episodes=n_episodes, **more)]
        coordinator.collectors.take_output("collector0", {"files": [], "evals": evals})

    report(1.0, 2, agents=4)  # one agent's episode per copy: some agents' never ended
    report(2.0, 4)  # "agents" left out: one per copy
    report(3.0, 8, agents=True)
    report(4.0, 8, agents=0)
    assert coordinator.status.eval_return is None
    report(5.0, 8, agents=4)  # 2 copies x 4 agents
    assert coordinator.status.eval_return == 5.0


def test_reported_paths_outside_path_data_are_refused(tmp_path):
    cfg = tiny_cfg(tmp_path)
    coordinator = Coordinator(cfg, ScriptedTransport.of_workers(tmp_path, {}))
    outside = tmp_path / "config.json"
    outside.write_text("{}")
    paths = [str(outside), str(tmp_path / "data" / ".." / "x_v0_n1.pt"), 17, "/etc/passwd"]
    coordinator.collectors.take_output("collector0", {"files": [{"path": p} for p in paths]})
    assert coordinator.rollouts.samples == 0 and coordinator.rollouts.counts["written"] == 0
    assert outside.exists()


def _start_result(tmp_path, version: int) -> dict:
    """A well-formed learner start result publishing ``version``."""
    return {
        "policy_path": str(tmp_path / "policy" / f"policy_v{version:08d}.pt"),
        "policy_version": version,
        "published_at": time.time(),
        "envstep": 10 * version,
        "batch_size": 4,
    }


@pytest.mark.parametrize("name", ["../ckpt_iter1.pt", "/etc/passwd", "ckpt", 7, "x" * 200 + ".pt"])
def test_a_forged_checkpoint_name_in_a_start_result_is_refused(tmp_path, name):
    from ding_lite.coordinator.checks import ResultError, check_learner_start

    out = {**_start_result(tmp_path, 3), "checkpoint": "ckpt_iter00000003.pt"}
    assert check_learner_start(out, tmp_path / "policy")["checkpoint"] == "ckpt_iter00000003.pt"
    with pytest.raises(ResultError, match="field 'checkpoint'"):
        check_learner_start({**out, "checkpoint": name}, tmp_path / "policy")


@pytest.mark.parametrize("ranks", [0, -1, "2", 2.0, True, None, 1 << 20])
def test_a_start_result_names_its_ranks_or_counts_as_one(tmp_path, ranks):
    from ding_lite.coordinator.checks import ResultError, check_learner_start

    out = _start_result(tmp_path, 0)
    assert check_learner_start(out, tmp_path / "policy")["ranks"] == 1  # not said: one
    assert check_learner_start({**out, "ranks": 4}, tmp_path / "policy")["ranks"] == 4
    with pytest.raises(ResultError, match="field 'ranks'"):
        check_learner_start({**out, "ranks": ranks}, tmp_path / "policy")


@pytest.mark.timeout(120)
def test_a_collector_whose_start_was_interrupted_is_closed_and_its_files_booked(tmp_path):
    """Ctrl-C while collector1's start task is on its way: the collector started anyway and
    wrote a rollout. The close must reach it, so the ledger books the file and nothing is
    left in path_data (seen with the Ray launcher, whose collectors register late)."""
    workers = make_workers(2)

    class Interrupting(ScriptedTransport):
        def send_task(self, worker_id, name, data, timeout):
            outcome = super().send_task(worker_id, name, data, timeout)
            if (worker_id, name) == ("collector1", "collector_start_task"):
                deadline = time.monotonic() + 30  # it collects and writes before the answer
                while not list((tmp_path / "data" / "collector1").glob("*.pt")):
                    assert time.monotonic() < deadline, "collector1 wrote nothing"
                    time.sleep(0.05)
                raise KeyboardInterrupt
            return outcome

    transport = Interrupting.of_workers(tmp_path, workers)
    coordinator = Coordinator(tiny_cfg(tmp_path), transport)
    with pytest.raises(KeyboardInterrupt):
        coordinator.run(10)
    assert "collector_close_task" in transport.names("collector1")
    ledger = coordinator.status.ledger
    assert ledger["left_in_path_data"] == 0, ledger
    assert ledger["written"] == sum(
        v for k, v in ledger.items() if k.startswith(("trained", "dropped"))
    )


class CorruptFirstLearnTask(ScriptedTransport):
    """Overwrites the files of the first learn task with garbage before the learner reads
    them, so that iteration trains on nothing."""

    corrupted = False

    def send_task(self, worker_id, name, data, timeout):
        if name == "learner_learn_task" and data.get("files") and not self.corrupted:
            self.corrupted = True
            for meta in data["files"]:
                Path(meta["path"]).write_bytes(b"not a rollout")
        return super().send_task(worker_id, name, data, timeout)


@pytest.mark.timeout(120)
def test_sync_collection_goes_on_after_an_iteration_that_trained_nothing(tmp_path):
    """A synchronous collector waits for a newer policy after each rollout; when the learner
    drops every file of an iteration (no new version comes), the coordinator lets it go on
    with the version it has instead of waiting for ever (the watchdog would end the run)."""
    transport = CorruptFirstLearnTask.of_workers(tmp_path, make_workers(1))
    cfg = tiny_cfg(tmp_path, "system.sync_collect=true", "system.collectors=1")
    cfg.system.stall_timeout = 30.0
    status = Coordinator(cfg, transport).run(10)
    assert transport.corrupted
    assert status.stop_reason == "max_train_iter" and status.train_iter == 6, status.stop_detail
    assert status.ledger["dropped_invalid"] >= 1 and status.policy_lag_max == 0
