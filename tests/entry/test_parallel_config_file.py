"""A parallel run whose Python config file defines a hook: every worker runs the file, and
``--resume DIR -c FILE`` resumes it."""

import json
import subprocess
import sys

import pytest

from ding_lite.utils.file_io import safe_torch_load
from ding_lite.worker.learner import latest_checkpoint

CONFIG_FILE = """
from ding_lite.worker.learner import LearnerHook, register_learner_hook


@register_learner_hook("count_iters_parallel_test")
class CountIters(LearnerHook):
    def __init__(self, *args, ext_args=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __call__(self, engine):
        self.calls += 1

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]


config = dict(
    exp_name="parallel_file_test",
    env=dict(name="cartpole", num_envs=4),
    policy=dict(learn=dict(batch_size=32, n_epochs=1), collect=dict(n_steps=16)),
    evaluator=dict(eval_freq=0, n_episodes=2, stop_value=None, min_train_return=None),
    learner=dict(hook=dict(counter=dict(type="count_iters_parallel_test", position="after_iter"))),
    system=dict(collectors=1, heartbeat_period=0.2, heartbeat_tolerance=2.0, task_timeout=30),
)
"""


def cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", "parallel", "-q", *args],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=cwd,
    )


@pytest.mark.timeout(300)
def test_a_hook_from_the_config_file_reaches_the_learner_and_resumes(tmp_path):
    cfg_file = tmp_path / "my_parallel.py"
    cfg_file.write_text(CONFIG_FILE)
    run = tmp_path / "run"
    first = cli("-c", str(cfg_file), "--exp-dir", str(run), "--max-train-iter", "3", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    ckpt = safe_torch_load(latest_checkpoint(run / "ckpt"))
    assert ckpt["train_iter"] == 3 and ckpt["hooks"]["counter"] == {"calls": 3}

    again = cli("--resume", str(run), "-c", str(cfg_file), "--max-train-iter", "5", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((run / "result.json").read_text())["train_iter"] == 5
    ckpt = safe_torch_load(latest_checkpoint(run / "ckpt"))
    assert ckpt["hooks"]["counter"] == {"calls": 5}  # the hook's state came back with it
