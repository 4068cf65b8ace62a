"""How a serial run ends when it cannot go on: divergence, bad values, a busy or new dir."""

import errno
import json
import os
import subprocess
import sys
import time

import pytest

from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.entry.cli.command import main
from ding_lite.entry.pipelines.parallel import compile_parallel_config
from ding_lite.entry.run.dir_lock import lock_run_dir
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
    script = (
        "import sys; from ding_lite.entry.run.dir_lock import lock_run_dir; "
        f"lock = lock_run_dir({str(run)!r}); print('held', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=f"in use by run pid {holder.pid}"):
            serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(run), max_train_iter=1)
        out = cli("serial", "-c", "cartpole_ppo", "--exp-dir", str(run), "--max-train-iter", "1")
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
        assert f"{run} is in use by run pid {holder.pid}" in out.stderr
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # the OS released the lock with the process: the dir is usable again
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(run), max_train_iter=1)
    assert json.loads((run / "result.json").read_text())["stop_reason"] == "max_train_iter"
    with lock_run_dir(run), pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
        compile_parallel_config(None, resume=str(run))  # the parallel pipeline's lock too


def test_runs_started_together_never_share_a_default_dir(tmp_path):
    script = (
        "import sys; from easydict import EasyDict; from ding_lite.entry.run.dir_lock import "
        "claim_run_dir; sys.stdin.readline(); "
        "lock = claim_run_dir(EasyDict(exp_dir=None, exp_name='exp')); "
        "print(lock.path, flush=True); sys.stdin.read()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for proc in procs:  # let them all go at once
            proc.stdin.write("go\n")
            proc.stdin.flush()
        dirs = [proc.stdout.readline().strip() for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)
    assert sorted(dirs) == ["exp", "exp_1", "exp_2", "exp_3"]


def test_discard_removes_only_what_the_run_created(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    lock = lock_run_dir(mine)
    assert not lock.created
    (mine / "config.json").write_text("{}")
    (mine / "tb").mkdir()
    lock.discard()
    assert sorted(os.listdir(mine)) == ["notes.txt"]

    new = tmp_path / "new" / "run"
    lock = lock_run_dir(new)
    assert lock.created and (new / ".lock").read_text().strip() == str(os.getpid())
    (new / "config.json").write_text("{}")
    lock.discard()
    assert not new.exists()
    lock_run_dir(new).release()  # a later run takes the folder again


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


def test_a_load_path_from_another_env_is_one_line_and_writes_nothing(tmp_path):
    """learner.load_path of a run with other env copies: the policy fits but the collector
    state does not; one line names the part, and the new run saves no half-loaded
    checkpoint (nor anything else)."""
    first = tmp_path / "first"
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(first), max_train_iter=2)
    ckpt = first / "ckpt" / "ckpt_iter00000002.pt"
    run = tmp_path / "run"
    proc = cli(
        "serial", "-c", "cartpole_ppo", *SMALL, "env.num_envs=8", f"learner.load_path={ckpt}",
        "--exp-dir", str(run), "max_train_iter=3",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ding-lite: error: checkpoint {ckpt} does not fit this run's collector")
    assert "Traceback" not in proc.stderr and "saved checkpoint" not in proc.stderr
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


def test_disk_full_at_a_checkpoint_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    real_fsync = os.fsync

    def full_for_checkpoints(fd):
        if "/ckpt/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_for_checkpoints)
    run = tmp_path / "run"
    code = main(
        ["serial", "-c", "cartpole_ppo", "-q", "--exp-dir", str(run), "--max-train-iter", "5",
         "learner.hook.save_ckpt_after_iter=2", *SMALL]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert f"disk full while writing {run}/ckpt/ckpt_iter00000002.pt" in err
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "disk_full" and result["train_iter"] == 2
    assert not list((run / "ckpt").iterdir())  # no partial checkpoint, no temp file


@pytest.mark.slow
def test_sigterm_mid_run_writes_result_and_exits_143(tmp_path):
    import signal

    run = tmp_path / "run"
    args = [sys.executable, "-m", "ding_lite", "serial", "-c", "cartpole_ppo", "-q",
            "--exp-dir", str(run), "--max-train-iter", "100000",
            "learner.hook.log_show_after_iter=1", *SMALL]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while "iter=3 " not in _read(run / "log.txt") and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert (
        err.strip()
        == f"ding-lite: interrupted (SIGTERM); resume with: ding-lite serial --resume {run}"
    )
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "interrupted" and result["train_iter"] >= 3
    assert (run / "ckpt" / f"ckpt_iter{result['train_iter']:08d}.pt").is_file()


def _read(path):
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
