"""Settings of data-parallel learners and of the Ray launcher that cannot work are refused
before anything starts, in one line."""

from __future__ import annotations

import importlib.util

import pytest

from ding_lite.entry.pipelines import parallel
from ding_lite.utils.errors import ConfigError


def test_a_minibatch_that_does_not_split_over_the_ranks_is_refused(tmp_path):
    with pytest.raises(ConfigError) as err:
        parallel.compile_parallel_config(
            "cartpole_ppo_parallel", learners=3, exp_dir=str(tmp_path / "run")
        )
    text = str(err.value)
    assert text.startswith("system.learners=3: policy.learn.batch_size=") and "\n" not in text
    assert not (tmp_path / "run").exists()
    cfg = parallel.compile_parallel_config(
        "cartpole_ppo_parallel", learners=2, exp_dir=str(tmp_path / "ok")
    )
    assert cfg.system.learners == 2


def test_the_ray_launcher_without_ray_says_what_to_install(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[ray\]'\)$"):
        parallel.compile_parallel_config(
            "cartpole_ppo_parallel", launcher="ray", exp_dir=str(tmp_path / "run")
        )
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError, match="system.launcher"):
        parallel.compile_parallel_config(
            "cartpole_ppo_parallel", launcher="slurm", exp_dir=str(tmp_path / "run")
        )
