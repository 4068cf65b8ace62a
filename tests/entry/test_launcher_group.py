"""The launcher treats the ranks of a data-parallel learner as one worker: started together
with one group's environment, all killed when one dies, restarted together (one restart)."""

from __future__ import annotations

import time

from helpers import FakeProc

from ding_lite.config import compile_config
from ding_lite.entry.launch import local as launcher


def test_a_dead_rank_restarts_the_whole_group_once(tmp_path, monkeypatch):
    spawned = []

    def spawn(role, worker_id, address, token, cfg, log_dir, register=None, rank_env=None):
        proc = FakeProc(rank_env)
        spawned.append((worker_id, proc))
        return proc

    monkeypatch.setattr(launcher, "spawn_worker", spawn)
    cfg = compile_config("cartpole_ppo_parallel", ["system.learners=3"])
    supervisor = launcher.Launcher(cfg, "127.0.0.1:1", "tok", tmp_path)
    supervisor.start_all()
    ranks = [p for wid, p in spawned if wid == "learner0"]
    assert [p.env["RANK"] for p in ranks] == ["0", "1", "2"]
    assert {p.env["WORLD_SIZE"] for p in ranks} == {"3"}
    assert len({p.env["MASTER_PORT"] for p in ranks}) == 1
    assert [wid for wid, _ in spawned].count("collector0") == 1  # collectors: one process
    supervisor.mark_registered(["learner0", "collector0", "collector1"])
    assert supervisor.alive("learner0")

    ranks[2].returncode = 3  # rank 2 lost its group
    assert not supervisor.alive("learner0")
    supervisor.poll()
    assert all(p.killed or p.returncode == 3 for p in ranks) and supervisor.restarts == 1
    assert supervisor.pending("learner") == 1
    time.sleep(launcher.RESTART_BACKOFF_S[0] + 0.05)
    supervisor.poll()
    new = [p for wid, p in spawned if wid == "learner0.r1"]
    assert [p.env["RANK"] for p in new] == ["0", "1", "2"]
    assert new[0].env["MASTER_PORT"] != ranks[0].env["MASTER_PORT"]
    supervisor.poll()  # the old group's dead ranks count once, not once per rank
    assert supervisor.restarts == 1


def test_learner_threads_are_shared_between_ranks():
    from ding_lite.utils.threads import worker_threads

    cores = worker_threads("learner", 0, 1)
    assert worker_threads("learner", 0, 2) == max(1, cores // 2)
    assert worker_threads("collector", 2, 4) == 1
