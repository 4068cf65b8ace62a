import pytest
import torch
from learner_fakes import VectorPolicy

from ding_lite.utils.errors import ConfigError
from ding_lite.worker.learner import (
    BaseLearner,
    LearnerHook,
    LoadCkptHook,
    LogShowHook,
    SaveCkptHook,
    build_hooks,
    register_learner_hook,
)
from ding_lite.worker.learner.learner_hook import LEARNER_HOOK_REGISTRY


class Recorder(LearnerHook):
    def __init__(self, name, priority=50, *, position, log):
        super().__init__(name, priority, position=position)
        self.log = log

    def __call__(self, engine):
        self.log.append((self.name, self.position, engine.train_iter, engine.last_iter.val))


def make_learner(tmp_path, hook=None, **kw):
    cfg = {"hook": hook if hook is not None else {}, **kw}
    return BaseLearner(cfg, VectorPolicy(2), exp_dir=tmp_path)


def test_priority_order_and_ties_keep_registration_order(tmp_path):
    log = []
    learner = make_learner(
        tmp_path,
        hook={"log_show_after_iter": 0, "save_ckpt_after_run": 0, "log_reduce_after_iter": False},
    )
    learner.register_hook(Recorder("late", 90, position="after_iter", log=log))
    learner.register_hook(Recorder("tie_a", 30, position="after_iter", log=log))
    learner.register_hook(Recorder("early", 5, position="after_iter", log=log))
    learner.register_hook(Recorder("tie_b", 30, position="after_iter", log=log))
    learner.register_hook(Recorder("before", 99, position="before_iter", log=log))
    learner.train(torch.ones(2))
    assert [name for name, *_ in log] == ["before", "early", "tie_a", "tie_b", "late"]
    # before_iter sees the old iteration count, after_iter the new one (train_iter); the
    # DI-engine counter last_iter is bumped after the after_iter hooks
    assert log[0][2] == 0 and log[1][2] == 1
    assert log[0][3] == 0 and log[1][3] == 0 and learner.last_iter == 1


def test_hooks_run_once_per_iteration_and_at_run_positions(tmp_path):
    log = []
    learner = make_learner(tmp_path, hook={})
    for pos in ("before_run", "after_run", "before_iter", "after_iter"):
        learner.register_hook(Recorder(pos, position=pos, log=log))
    learner.call_hook("before_run")
    for _ in range(3):
        learner.train(torch.ones(2))
    learner.call_hook("after_run")
    positions = [p for _, p, *_ in log]
    assert positions == ["before_run"] + ["before_iter", "after_iter"] * 3 + ["after_run"]


def test_shorthands_build_builtins():
    hooks = build_hooks(
        {
            "save_ckpt_after_iter": 100,
            "log_show_after_iter": 10,
            "load_ckpt_before_run": "some/path",
            "save_ckpt_after_run": True,
        }
    )
    by_name = {h.name: h for h in hooks}
    assert isinstance(by_name["save_ckpt_after_iter"], SaveCkptHook)
    assert by_name["save_ckpt_after_iter"].freq == 100
    assert by_name["save_ckpt_after_iter"].position == "after_iter"
    assert isinstance(by_name["log_show_after_iter"], LogShowHook)
    assert by_name["log_show_after_iter"].freq == 10
    assert isinstance(by_name["load_ckpt_before_run"], LoadCkptHook)
    assert by_name["load_ckpt_before_run"].path == "some/path"
    assert by_name["save_ckpt_after_run"].position == "after_run"


@pytest.mark.parametrize("off", [0, False, "", None])
def test_false_value_disables_a_shorthand(off):
    assert build_hooks({"save_ckpt_after_iter": off, "load_ckpt_before_run": off}) == []


def test_full_form_with_registered_class():
    log = []

    class Tagged(Recorder):
        def __init__(self, name, priority=50, *, position, tag):
            super().__init__(name, priority, position=position, log=log)
            self.tag = tag

    register_learner_hook("tagged_test_hook", Tagged, force=True)
    try:
        (hook,) = build_hooks(
            {
                "mine": {
                    "type": "tagged_test_hook",
                    "position": "after_iter",
                    "priority": 7,
                    "ext_args": {"tag": "x"},
                }
            }
        )
        assert hook.name == "mine" and hook.priority == 7 and hook.tag == "x"
        with pytest.raises(ConfigError, match="unknown field"):
            build_hooks({"m": {"type": "tagged_test_hook", "position": "after_iter", "prio": 1}})
        with pytest.raises(ConfigError, match="unexpected keyword"):
            build_hooks(
                {
                    "m": {
                        "type": "tagged_test_hook",
                        "position": "after_iter",
                        "ext_args": {"tag": 1, "nope": 2},
                    }
                }
            )
    finally:
        LEARNER_HOOK_REGISTRY._items.pop("tagged_test_hook")


def test_register_twice_needs_force():
    with pytest.raises(KeyError, match="already registered"):
        register_learner_hook("save_ckpt", SaveCkptHook)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"sav_ckpt_after_iter": 5}, "did you mean 'save_ckpt'"),
        ({"save_ckpt_after_itr": 5}, "must end with one of"),
        ({"save_ckpt_after_iter": -1}, "positive int"),
        ({"load_ckpt_before_run": 3}, "takes a path"),
        ({"m": {"type": "save_ckpt", "position": "after_lunch"}}, "unknown hook position"),
        ({"m": {"position": "after_iter"}}, "needs 'type'"),
    ],
)
def test_bad_hook_config_is_a_clear_error(cfg, message):
    with pytest.raises(ConfigError, match=message):
        build_hooks(cfg)


def test_duplicate_hook_name_rejected(tmp_path):
    learner = make_learner(tmp_path)
    learner.register_hook(Recorder("x", position="after_iter", log=[]))
    with pytest.raises(ValueError, match="already registered"):
        learner.register_hook(Recorder("x", position="before_iter", log=[]))


class StatefulHook(LearnerHook):
    def __init__(self, name, priority=50, *, position):
        super().__init__(name, priority, position=position)
        self.calls = 0

    def __call__(self, engine):
        self.calls += 1

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]


def test_hook_state_rides_in_checkpoints(tmp_path):
    learner = make_learner(tmp_path, hook={"save_ckpt_after_iter": 2})
    # priority 30 runs before save_ckpt (40), so the saved state includes this iteration
    learner.register_hook(StatefulHook("counter", 30, position="after_iter"))
    for _ in range(4):
        learner.train(torch.ones(2))
    files = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert files == ["ckpt_iter00000002.pt", "ckpt_iter00000004.pt"]
    fresh = make_learner(tmp_path, hook={"load_ckpt_before_run": str(tmp_path / "ckpt")})
    counter = StatefulHook("counter", 30, position="after_iter")
    fresh.register_hook(counter)
    fresh.call_hook("before_run")
    assert fresh.last_iter == 4
    assert counter.calls == 4
    assert torch.equal(fresh.policy.w, torch.full((2,), 4.0))


def test_log_show_logs_means_and_clears(tmp_path, caplog):
    learner = make_learner(tmp_path, hook={"log_show_after_iter": 2})
    with caplog.at_level("INFO", logger="ding_lite"):
        learner.train(torch.ones(2))
        assert "policy_loss" in learner.log_buffer
        learner.train(torch.ones(2))
    assert list(learner.log_buffer) == ["train_time"]  # added after the hooks ran
    assert any("iter=2" in r.message and "policy_loss=3" in r.message for r in caplog.records)
