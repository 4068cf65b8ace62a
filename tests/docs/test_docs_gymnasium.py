"""Runs the ``predict`` examples of docs/quickstart.rst and docs/gymnasium.rst and checks
the page's error message against the code."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import DOCS, TINY

from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.envs.from_config import build_env
from ding_lite.utils.errors import ConfigError


def test_quickstart_predict_example(tmp_path, monkeypatch, docs_code):
    monkeypatch.chdir(tmp_path)
    serial_pipeline("cartpole_ppo", seed=0, overrides=TINY, max_train_iter=2)
    namespace = {"__name__": "docs_predict_example"}
    exec(docs_code("quickstart.rst", "predict"), namespace)
    assert namespace["policy"].checkpoint.name == "best.pt"
    action = namespace["action"]
    assert isinstance(action, np.ndarray) and action.shape == () and int(action) in (0, 1)
    assert namespace["actions"].shape == (2,) and namespace["actions"].dtype == np.int64


def test_gymnasium_predict_example(tmp_path, monkeypatch, docs_code, capsys):
    pytest.importorskip("gymnasium", reason="the gym extra is not installed")
    monkeypatch.chdir(tmp_path)
    serial_pipeline("gym_ppo", seed=0, overrides=TINY, max_train_iter=2)
    capsys.readouterr()  # the run's summary: only the example's output is checked below
    namespace = {"__name__": "docs_predict_gym_example"}
    exec(docs_code("gymnasium.rst", "predict-gym"), namespace)
    assert namespace["episode_return"] >= 8  # an episode ran to its end through predict
    assert re.match(r"best\.pt \(iteration 2\): return \d+", capsys.readouterr().out)


def test_missing_dependency_message_is_the_code_s(no_box2d):
    pytest.importorskip("gymnasium", reason="the gym extra is not installed")
    (line,) = re.findall(
        r"^    ding-lite: error: (gym:CarRacing-v3 .*)$",
        (DOCS / "gymnasium.rst").read_text(encoding="utf-8"),
        flags=re.M,
    )
    cfg = compile_config("gym_ppo", ["env.name=gym:CarRacing-v3"])
    with pytest.raises(ConfigError) as err:
        build_env(cfg, 1, "cpu", 0)
    assert str(err.value) == line
