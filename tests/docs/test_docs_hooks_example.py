"""Runs the custom-hook example of docs/hooks.rst, scaled down to a few tiny iterations."""

from __future__ import annotations

import json

import pytest
from helpers import TINY

import ding_lite
from ding_lite.entry.pipelines.serial import serial_pipeline as real_serial_pipeline
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.file_io import safe_torch_load
from ding_lite.worker.learner import LEARNER_HOOK_REGISTRY, latest_checkpoint

# Small enough that an iteration takes milliseconds; evaluation only at the end, 2 episodes.


@pytest.fixture
def example(tmp_path, monkeypatch, docs_code):
    """Runs the example as written, with ``serial_pipeline`` made tiny; returns its runs."""
    runs = []

    def tiny_serial_pipeline(cfg, *args, **kwargs):
        kwargs["overrides"] = [*TINY, *kwargs.get("overrides", ())]
        kwargs["max_train_iter"] = 3
        kwargs["exp_dir"] = str(tmp_path / "example")
        policy = real_serial_pipeline(cfg, *args, **kwargs)
        runs.append(policy)
        return policy

    monkeypatch.setattr(ding_lite, "serial_pipeline", tiny_serial_pipeline)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "docs_hooks_example"}
    try:
        exec(compile(docs_code("hooks.rst", "hooks-example"), "docs/hooks.rst", "exec"), namespace)
        yield namespace, runs
    finally:
        LEARNER_HOOK_REGISTRY._items.pop("kl_guard", None)


def hook_named(learner, name):
    [hook] = [h for hooks in learner.hooks.values() for h in hooks if h.name == name]
    return hook


def test_example_trains_with_the_hook(example, tmp_path):
    namespace, runs = example
    [policy] = runs
    assert 1 <= policy.result["train_iter"] <= 3
    run = tmp_path / "example"
    learner_cfg = json.loads((run / "config.json").read_text())["learner"]
    hook_cfg = learner_cfg["hook"]["kl_guard"]
    assert hook_cfg["type"] == "kl_guard" and "priority" not in hook_cfg
    # Built from that config, the hook gets the class's default priority.
    learner = ding_lite.BaseLearner(learner_cfg, policy=None, exp_dir="unused")
    assert hook_named(learner, "kl_guard").priority == 30
    ckpt = safe_torch_load(latest_checkpoint(run / "ckpt"))
    assert set(ckpt["hooks"]["kl_guard"]) == {"strikes", "worst_kl"}
    assert ckpt["hooks"]["kl_guard"]["worst_kl"] > 0.0


def test_guard_stops_the_run_and_its_state_survives_resume(example, tmp_path):
    """What the page says: request_stop ends the run; strikes ride in the checkpoint."""
    cfg = ding_lite.get_config("cartpole_ppo")
    cfg.learner.hook.kl_guard = dict(
        type="kl_guard",
        position="after_iter",
        ext_args=dict(max_kl=-1.0, patience=2),  # approx_kl >= 0: every iteration strikes
    )
    run = tmp_path / "stopped"
    stopped = real_serial_pipeline(cfg, seed=0, overrides=TINY, exp_dir=str(run), max_train_iter=10)
    assert stopped.result["train_iter"] == 2
    assert "stop requested: approx_kl above -1.0 for 2 iterations" in (run / "log.txt").read_text()
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"].startswith("approx_kl above -1.0 for 2 iterations")
    ckpt = safe_torch_load(latest_checkpoint(run / "ckpt"))
    assert ckpt["train_iter"] == 2 and ckpt["hooks"]["kl_guard"]["strikes"] == 2

    # Beside resume a config only registers; cartpole_ppo's own settings differ from the run's.
    with pytest.raises(ConfigError, match="unlike the run's config.json"):
        real_serial_pipeline("cartpole_ppo", resume=str(run), max_train_iter=10)
    resumed = real_serial_pipeline(resume=str(run), max_train_iter=10)
    assert resumed.result["train_iter"] == 3  # the restored counter trips on the next one
    assert "resumed at iteration 2" in (run / "log.txt").read_text()
    ckpt = safe_torch_load(latest_checkpoint(run / "ckpt"))
    assert ckpt["hooks"]["kl_guard"]["strikes"] == 3


def test_hook_runs_between_log_show_and_save_ckpt(example):
    namespace, _ = example
    learner = ding_lite.BaseLearner(
        {"hook": {"save_ckpt_after_iter": 1}}, policy=None, exp_dir="unused"
    )
    learner.register_hook(namespace["KLGuardHook"]("kl_guard", position="after_iter"))
    names = [hook.name for hook in learner.hooks["after_iter"]]
    assert names == [
        "log_reduce_after_iter",
        "log_show_after_iter",
        "kl_guard",
        "save_ckpt_after_iter",
    ]


def test_priorities_as_the_page_states(example):
    """Built-in defaults; shorthands and full forms get the class default unless given one."""
    hooks = {
        "load_ckpt_before_run": "not/loaded/until/the/run/starts",
        "kl_guard_after_iter": True,  # a shorthand of the example's type
        "full_default": {"type": "save_ckpt", "position": "after_iter"},
        "full_given": {"type": "kl_guard", "position": "after_iter", "priority": 45},
    }
    learner = ding_lite.BaseLearner({"hook": hooks}, policy=None, exp_dir="unused")
    priorities = {h.name: h.priority for hs in learner.hooks.values() for h in hs}
    assert priorities == {
        "load_ckpt_before_run": 20,
        "save_ckpt_after_run": 40,
        "log_show_after_iter": 20,
        "log_reduce_after_iter": 10,
        "kl_guard_after_iter": 30,
        "full_default": 40,
        "full_given": 45,
    }
    assert ding_lite.LearnerHook.default_priority == 50


def test_duplicate_hook_name_from_config_is_a_config_error():
    hooks = {
        "again": {"type": "save_ckpt", "position": "after_iter", "name": "save_ckpt_after_run"}
    }
    with pytest.raises(ConfigError, match="a hook named 'save_ckpt_after_run'"):
        ding_lite.BaseLearner({"hook": hooks}, policy=None, exp_dir="unused")
