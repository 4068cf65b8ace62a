"""The results of FlaskFileSystemLearner's tasks, field by field: what start, get_data and
close answer, and when a learn info says the run is done and why."""

from types import SimpleNamespace

from helpers import TINY

from ding_lite.config import compile_config
from ding_lite.utils import stop
from ding_lite.worker.learner.comm import FlaskFileSystemLearner
from ding_lite.worker.learner.comm.intake import Intake


def test_learner_start_get_data_and_close_results(tmp_path):
    cfg = compile_config(
        "cartpole_ppo_parallel", TINY, exp_dir=str(tmp_path), seed=0, max_train_iter=1
    )
    cfg.system.path_policy = str(tmp_path / "policy")
    cfg.system.path_data = str(tmp_path / "data")
    learner = FlaskFileSystemLearner()
    start = learner.start_task({"config": dict(cfg)})
    try:
        assert set(start) == {
            "policy_path",
            "policy_version",
            "resumed_from",
            "checkpoint",
            "envstep",
            "batch_size",
            "ranks",
            "published_at",
            "running",
        }
        assert start["ranks"] == 1  # not distributed
        assert start["running"] is False  # a fresh start, not a take-back
        assert start["policy_version"] == 0 and start["resumed_from"] is None
        assert start["checkpoint"] is None
        assert start["policy_path"] == str(tmp_path / "policy" / "policy_v00000000.pt")
        n_steps, num_envs = cfg.policy.collect.n_steps, cfg.env.num_envs
        assert start["batch_size"] == n_steps * num_envs * cfg.system.collectors
        demand = learner.get_data_task({})
        fields = {"batch_size", "iteration", "policy_version", "stop_reason", "error", "received"}
        assert set(demand) == fields
        assert demand["stop_reason"] is None and demand["error"] == ""
        assert demand["received"] == []  # the files plane: the coordinator scans path_data
    finally:
        closed = learner.close_task({"discard": []})
    assert closed == {
        "iteration": 0,
        "dropped_run_end": [],
        "left_in_path_data": 0,
        "received": [],
        "stop_reason": None,
        "error": "",
        "best": None,
    }
    assert learner.closed.is_set()


def test_learn_info_fields_and_done_reason():
    learner = FlaskFileSystemLearner()
    learner.cfg = SimpleNamespace(max_env_step=100, max_train_iter=5)
    fake = SimpleNamespace(envstep=0, train_iter=0, learn_info={}, stop_reason=None)
    learner._learner = fake
    intake = Intake()
    intake.lags.append(1)
    info = learner._info(intake)
    assert info["done_reason"] is None and info["stop_reason"] is None
    fake.train_iter = 5
    info = learner._info(Intake())
    assert info["done"] and info["done_reason"] == "max_train_iter"
    fake.envstep = 100  # both reached: the env-step limit is named
    assert learner._info(Intake())["done_reason"] == "max_env_step"
    fake.envstep, fake.train_iter, fake.stop_reason = 0, 1, stop.DIVERGED
    info = learner._info(Intake())
    assert info["done"] and info["done_reason"] == info["stop_reason"] == "diverged"
