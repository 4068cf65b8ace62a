"""Ctrl-C or SIGTERM at any moment of start-up: one line, exit 130 / 143, nothing left."""

import signal
import subprocess
import sys
import time

import pytest

ARGS = ["serial", "-c", "cartpole_ppo", "-q", "--max-train-iter", "100000",
        "env.num_envs=4", "policy.collect.n_steps=16", "evaluator.eval_freq=0"]  # fmt: skip


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_start_up_gives_one_line(tmp_path, sig, code):
    # Delays from the interpreter's start through torch's import, config compilation and
    # env building into the first iterations; the slower the machine, the earlier each lands.
    for delay in (0.2, 0.4, 0.7, 1.0, 1.5, 2.5):
        run = tmp_path / f"run{delay}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "ding_lite", *ARGS, "--exp-dir", str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        # A shell reports 130 / 143 both for that exit code and for an exit by the signal
        # itself (-2 / -15 here), which CPython may choose while it shuts down.
        assert proc.returncode in (code, -sig), (delay, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ding-lite: interrupted"), (delay, err)
        # A run that never trained leaves nothing; one that did says how to resume.
        if run.exists():
            assert "--resume" in lines[0] and (run / "result.json").is_file(), (delay, err)
        else:
            assert "--resume" not in lines[0]
