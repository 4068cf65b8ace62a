"""policy.learn.kickstart: a trained teacher pulls the student toward its actions while its
coefficient decays; bad teachers and settings are one line before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ding_lite import load_policy, serial_pipeline
from ding_lite.entry.run.options import RunOptions, compile_run_config
from ding_lite.policy.ppo.kickstart import Kickstart
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.learner.saved_policy import load_teacher


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("teacher") / "run"
    serial_pipeline("cartpole_ppo", max_train_iter=10, exp_dir=str(run), verbose=0)
    return run


def _kl_to(teacher_dir: Path, student_dir: Path, obs: torch.Tensor) -> float:
    t, s = load_policy(teacher_dir).model, load_policy(student_dir).model
    with torch.no_grad():
        return float(t.get_dist(obs).kl(s.get_dist(obs)).mean())


def test_the_coefficient_falls_linearly_to_zero():
    ks = Kickstart(torch.nn.Linear(1, 1), {"coef": 2.0, "value_coef": 0.0, "decay_iters": 4})
    assert [ks.factor(i) for i in range(6)] == [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    steady = Kickstart(torch.nn.Linear(1, 1), {"coef": 1.0, "value_coef": 0.0, "decay_iters": 0})
    assert steady.factor(10_000) == 1.0


def test_a_kickstarted_student_ends_closer_to_its_teacher(teacher, tmp_path):
    common = dict(max_train_iter=3, seed=7, verbose=0)
    serial_pipeline("cartpole_ppo", exp_dir=str(tmp_path / "scratch"), **common)
    serial_pipeline(
        "cartpole_ppo",
        overrides=[f"policy.learn.kickstart.teacher={teacher}", "policy.learn.kickstart.coef=5"],
        exp_dir=str(tmp_path / "kicked"),
        **common,
    )
    obs = torch.randn(512, 4, generator=torch.Generator().manual_seed(0)) * 0.5
    kicked = _kl_to(teacher, tmp_path / "kicked", obs)
    scratch = _kl_to(teacher, tmp_path / "scratch", obs)
    assert kicked < 0.5 * scratch


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["policy.learn.kickstart.teacher=/nonexistent/run"], "no such run dir, checkpoint file"),
        (["policy.learn.kickstart.coef=-1"], r"kickstart.coef out of range: -1"),
        (["policy.learn.kickstart.decay_iters=-2"], r"kickstart.decay_iters out of range: -2"),
    ],
)
def test_bad_kickstart_settings_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        compile_run_config("cartpole_ppo", RunOptions(overrides=overrides))
    assert "\n" not in str(err.value)


def test_a_teacher_of_other_spaces_is_refused_naming_both(teacher):
    with pytest.raises(ConfigError, match=r"acts on observations \[4\].* this run has \[3\]"):
        load_teacher(str(teacher), (3,), load_policy(teacher).action_space)


def test_a_recurrent_teacher_is_refused(tmp_path):
    run = tmp_path / "lstm"
    serial_pipeline("cartpole_lstm_ppo", max_train_iter=1, exp_dir=str(run), verbose=0)
    trained = load_policy(run)
    with pytest.raises(ConfigError, match="is recurrent; a teacher must be feed-forward"):
        load_teacher(str(run), trained.obs_shape, trained.action_space)
