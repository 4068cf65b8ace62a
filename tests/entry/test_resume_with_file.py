"""``--resume DIR -c FILE``: FILE registers the hooks its run used; the saved config stays."""

import json
import subprocess
import sys

CONFIG_FILE = """
from ding_lite.worker.learner import LearnerHook, register_learner_hook


@register_learner_hook("count_iters_test")
class CountIters(LearnerHook):
    def __init__(self, *args, ext_args=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __call__(self, engine):
        self.calls += 1

    def state_dict(self):
        return {{"calls": self.calls}}

    def load_state_dict(self, state):
        self.calls = state["calls"]


config = dict(
    exp_name="resume_file_test",
    env=dict(name="cartpole", num_envs=4),
    policy=dict(learn=dict(batch_size=32, n_epochs=1), collect=dict(n_steps={n_steps})),
    evaluator=dict(eval_freq=0, n_episodes=2, stop_value=None, min_train_return=None),
    learner=dict(hook=dict(counter=dict(type="count_iters_test", position="after_iter"))),
)
"""


def cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", "serial", "-q", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_resume_with_the_file_that_defines_the_hook(tmp_path):
    cfg_file = tmp_path / "my_exp.py"
    cfg_file.write_text(CONFIG_FILE.format(n_steps=16))
    run = tmp_path / "run"
    first = cli("-c", str(cfg_file), "--exp-dir", str(run), "--max-train-iter", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr

    # Without the file the hook type is unknown: one line, exit 2, the run untouched.
    bare = cli("--resume", str(run), "--max-train-iter", "3", cwd=tmp_path)
    assert bare.returncode == 2 and len(bare.stderr.strip().splitlines()) == 1
    assert "count_iters_test" in bare.stderr
    assert json.loads((run / "result.json").read_text())["train_iter"] == 2

    resumed = cli("--resume", str(run), "-c", str(cfg_file), "--max-train-iter", "3", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run / "result.json").read_text())["train_iter"] == 3

    # A file whose settings differ from the saved config: one line naming the key.
    changed = tmp_path / "changed.py"
    changed.write_text(CONFIG_FILE.format(n_steps=32))
    refused = cli("--resume", str(run), "-c", str(changed), "--max-train-iter", "4", cwd=tmp_path)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "policy.collect.n_steps" in line and "config.json" in line
    assert json.loads((run / "result.json").read_text())["train_iter"] == 3
