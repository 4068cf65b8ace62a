"""DI-engine-style hooks: ``ext_args`` as one mapping, ``**kwargs``, ``positions``."""

import logging

from ding_lite.worker.learner import LearnerHook, build_hooks, register_learner_hook
from ding_lite.worker.learner.learner_hook import LEARNER_HOOK_REGISTRY


class EveryNth(LearnerHook):
    """Written as DI-engine's hooks are: ``ext_args`` one mapping, the rest passed on."""

    def __init__(self, *args, ext_args=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.freq = ext_args.freq if ext_args else 1
        self.ext_args = ext_args

    def __call__(self, engine):
        pass


def test_ext_args_arrive_as_one_mapping_when_the_constructor_takes_them():
    register_learner_hook("every_nth_test", EveryNth)
    try:
        spec = {"type": "every_nth_test", "position": "after_iter", "ext_args": {"freq": 7}}
        (hook,) = build_hooks({"nth": {**spec, "priority": 12}})
        assert hook.freq == 7 and hook.ext_args == {"freq": 7} and hook.ext_args.freq == 7
        assert (hook.name, hook.priority, hook.position) == ("nth", 12, "after_iter")
        (bare,) = build_hooks({"nth": {"type": "every_nth_test", "position": "before_run"}})
        assert bare.freq == 1 and bare.ext_args == {}
    finally:
        LEARNER_HOOK_REGISTRY._items.pop("every_nth_test", None)


def test_positions_and_extra_keyword_arguments(caplog):
    assert list(LearnerHook.positions) == ["before_run", "after_run", "before_iter", "after_iter"]
    with caplog.at_level(logging.WARNING):
        hook = EveryNth("h", 3, position="before_iter", colour="red")
    assert hook.priority == 3 and hook.position == "before_iter"
    assert "ignoring option(s) ['colour']" in caplog.text
