"""The launcher's side of a lost worker: a child that exited is gone for the coordinator at
once, and a failed worker is replaced under a fresh id after a growing backoff, within the
run's restart budget."""

from __future__ import annotations

import time
from types import SimpleNamespace

from helpers import TOKEN, FakeProc

from ding_lite.config import compile_config
from ding_lite.entry.launch import local as launcher


def test_launcher_drops_a_worker_whose_process_exited(tmp_path):
    cfg = compile_config("cartpole_ppo_parallel", ["system.max_restarts=0"])
    supervisor = launcher.Launcher(cfg, "127.0.0.1:1", TOKEN, tmp_path)
    supervisor.procs["learner0"] = FakeProc()
    supervisor.roles["learner0"] = "learner"
    master = SimpleNamespace(worker_ids=lambda role: ["learner0", "remote"])
    transport = launcher.LauncherTransport(master, supervisor)
    assert transport.worker_ids("learner") == ["learner0", "remote"]
    supervisor.procs["learner0"].returncode = 1  # the child exited
    assert transport.worker_ids("learner") == ["remote"]  # at once, heartbeats or not


def test_launcher_replaces_a_failed_worker_under_a_fresh_id(tmp_path, monkeypatch):
    spawned = []

    def spawn(role, worker_id, address, token, cfg, log_dir, register=None, rank_env=None):
        spawned.append(worker_id)
        return FakeProc()

    monkeypatch.setattr(launcher, "spawn_worker", spawn)
    cfg = compile_config("cartpole_ppo_parallel", ["system.max_restarts=2"])
    supervisor = launcher.Launcher(cfg, "127.0.0.1:1", TOKEN, tmp_path)
    supervisor.start_all()
    assert spawned == ["learner0", "collector0", "collector1"]
    supervisor.mark_registered(spawned)
    old = supervisor.procs["collector1"]
    assert supervisor.worker_failed("collector1", "collector", "lost") is True
    assert old.killed and supervisor.restarts == 1 and not supervisor.alive("collector1")
    assert supervisor.pending("collector") == 1  # due after its backoff
    supervisor.poll()
    assert "collector1.r1" not in spawned  # 0.5 s have not passed yet
    time.sleep(launcher.RESTART_BACKOFF_S[0] + 0.05)
    supervisor.poll()
    assert spawned[-1] == "collector1.r1"
    assert supervisor.worker_failed("collector1.r1", "collector", "lost") is True
    (when, _, new_id), *_ = supervisor._due
    assert new_id == "collector1.r2" and when - time.monotonic() > 0.5  # the second backoff
    # The budget is per run: no restart left for the learner, which is killed all the same.
    learner = supervisor.procs["learner0"]
    assert supervisor.worker_failed("learner0", "learner", "lost") is False
    assert learner.killed and supervisor.restarts == 2
    assert supervisor.worker_failed("learner0", "learner", "lost") is False  # same answer
    assert supervisor.alive("remote")  # not a child of this launcher
