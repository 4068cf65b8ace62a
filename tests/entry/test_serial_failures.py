"""How a serial run ends when it cannot go on: divergence, bad values, a busy or new dir."""

import json
import subprocess
import sys
import time

import pytest

from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.entry.run_lock import RunLock
from ding_lite.utils.errors import ConfigError

SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "policy.learn.n_epochs=2",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
]


def cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_a_huge_learning_rate_diverges_with_exit_1(tmp_path):
    run = tmp_path / "run"
    out = cli(
        "serial", "-c", "cartpole_ppo", "--exp-dir", str(run), "--max-train-iter", "20",
        "policy.learn.learning_rate=1e30", "policy.learn.max_skipped_steps=10", *SMALL,
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "diverged" and result["skipped_steps"] >= 10
    assert result["train_iter"] < 20
    assert "diverged" in out.stderr and "Traceback" not in out.stderr


def test_a_value_float32_cannot_hold_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="finite in float32"):
        compile_config("cartpole_ppo", ["policy.learn.learning_rate=1e39"])
    out = cli("serial", "-c", "cartpole_ppo", "--exp-dir", str(tmp_path / "r"),
              "policy.learn.learning_rate=1e39")  # fmt: skip
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_second_run_on_a_busy_dir_is_refused_naming_the_holder(tmp_path):
    run = tmp_path / "run"
    script = f"from ding_lite.entry.run_lock import RunLock; RunLock({str(run)!r}); print('held', flush=True); import time; time.sleep(60)"  # noqa: E501
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=f"in use by run pid {holder.pid}"):
            serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(run), max_train_iter=1)
        out = cli("serial", "-c", "cartpole_ppo", "--exp-dir", str(run), "--max-train-iter", "1")
        assert out.returncode == 2 and f"pid {holder.pid}" in out.stderr
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # the OS released the lock with the process: the dir is usable again
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(run), max_train_iter=1)
    with RunLock(run):
        pass


def test_a_run_that_fails_before_training_leaves_no_dir(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(ConfigError):
        serial_pipeline(
            "cartpole_ppo",
            overrides=[*SMALL, "learner.hook.log_show_after_iter=nope"],
            exp_dir=str(run),
            max_train_iter=1,
        )
    assert not run.exists()


@pytest.mark.slow
def test_sigint_during_start_up_leaves_a_rerunnable_command(tmp_path):
    import signal

    run = tmp_path / "run"
    args = [sys.executable, "-m", "ding_lite", "serial", "-c", "cartpole_ppo", "--exp-dir",
            str(run), "--max-train-iter", "2", *SMALL]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # importing torch, building envs
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
