"""DI-engine's BaseLearner contract: the counter, the policy setter, save_checkpoint via
the hook, load_path, log_buffer timings, priority_info."""

import torch
from learner_fakes import VectorPolicy

from ding_lite.policy.base import LearnMode
from ding_lite.utils.counter import CountVar
from ding_lite.worker.learner import BaseLearner, LearnerHook, latest_checkpoint


def test_count_var_acts_as_an_int():
    it = CountVar(7)
    it.add(1)
    assert it.val == 8 and it == 8 and 7 < it <= 8 and int(it) == 8
    assert f"{it:05d}" == "00008" and str(it) == "8" and it % 3 == 2 and 10 - it == 2
    it.update(3)
    assert it.val == 3 and list(range(it)) == [0, 1, 2]


class Recorder(LearnerHook):
    def __init__(self, name, priority=None, *, position, seen):
        super().__init__(name, priority, position=position)
        self.seen = seen

    def __call__(self, engine):
        self.seen.append((self.position, engine.last_iter.val, engine.train_iter))


def test_last_iter_is_bumped_after_the_after_iter_hooks(tmp_path):
    seen = []
    learner = BaseLearner(
        {"hook": {"save_ckpt_after_run": False}}, VectorPolicy(2), exp_dir=tmp_path
    )
    for pos in ("before_iter", "after_iter"):
        learner.register_hook(Recorder(pos, position=pos, seen=seen))
    for _ in range(2):
        learner.train(torch.ones(2))
    assert seen == [
        ("before_iter", 0, 0),
        ("after_iter", 0, 1),
        ("before_iter", 1, 1),
        ("after_iter", 1, 2),
    ]
    assert learner.last_iter == 2 and isinstance(learner.last_iter, CountVar)
    assert (
        learner.state_dict()["train_iter"] == 2 and type(learner.state_dict()["train_iter"]) is int
    )


class FakePolicy:
    """A policy whose learn mode is handed the callables it runs."""

    def __init__(self):
        self.inner = VectorPolicy(2)
        self.learn_mode = LearnMode(
            forward=self.inner.forward,
            prepare=lambda data: data,
            state_dict=self.inner.state_dict,
            load_state_dict=self.inner.load_state_dict,
        )


def test_policy_setter_takes_a_policy_or_its_learn_mode(tmp_path):
    policy = FakePolicy()
    learner = BaseLearner({}, None, exp_dir=tmp_path)
    learner.policy = policy.learn_mode  # DI-engine's idiom
    assert learner.policy is policy.learn_mode  # trained through, as DI-engine's learner
    learner.train(torch.ones(2))
    assert torch.equal(policy.inner.w, torch.ones(2))


class CustomSave(LearnerHook):
    """Replaces how checkpoints are saved: a named one, counting its calls."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __call__(self, engine):
        self.calls += 1
        engine.save_checkpoint(f"custom{self.calls}")


def test_save_checkpoint_runs_the_save_hook(tmp_path):
    learner = BaseLearner({}, VectorPolicy(2), exp_dir=tmp_path)
    learner.train(torch.ones(2))
    path = learner.save_checkpoint()  # the built-in save_ckpt_after_run hook
    assert path == tmp_path / "ckpt" / "ckpt_iter00000001.pt" and path.is_file()

    other = BaseLearner(
        {"hook": {"save_ckpt_after_run": False}}, VectorPolicy(2), exp_dir=tmp_path / "b"
    )
    hook = CustomSave("save_ckpt_after_run", position="after_run")
    other.register_hook(hook)
    other.train(torch.ones(2))
    assert other.save_checkpoint() == tmp_path / "b" / "ckpt" / "custom1.pt" and hook.calls == 1
    assert latest_checkpoint(tmp_path / "b" / "ckpt") is None  # no ckpt_iter file written


def test_load_path_loads_before_the_run(tmp_path):
    first = BaseLearner({}, VectorPolicy(2), exp_dir=tmp_path / "a")
    first.train(torch.full((2,), 3.0))
    saved = first.save_checkpoint()
    second = BaseLearner({"load_path": str(saved)}, VectorPolicy(2), exp_dir=tmp_path / "b")
    assert second.load_path == str(saved)
    second.call_hook("before_run")
    assert second.train_iter == 1 and torch.equal(second.policy.w, torch.full((2,), 3.0))


def test_priority_info_and_timings(tmp_path):
    batches = iter([torch.ones(2), torch.ones(2), None])
    learner = BaseLearner(
        {"hook": {"save_ckpt_after_run": False, "log_show_after_iter": 0}},
        VectorPolicy(2),
        exp_dir=tmp_path,
        get_data=lambda: next(batches),
    )
    assert learner.priority_info is None
    learner.start()
    assert learner.train_iter == 2
    assert len(learner.log_buffer["train_time"]) == 2
    assert len(learner.log_buffer["data_time"]) == 3 and min(learner.log_buffer["data_time"]) >= 0
