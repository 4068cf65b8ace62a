import json
import subprocess
import sys

import pytest

SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "evaluator.n_episodes=2",
    "evaluator.stop_value=none",
]


def run_cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", *args], capture_output=True, text=True, timeout=timeout
    )


def test_short_cli_run(tmp_path):
    # Overrides may come before the flags, between them and after them (as users type).
    out = run_cli(
        "serial",
        "-c",
        "cartpole_ppo",
        *SMALL[:2],
        "--seed",
        "2",
        "--exp-dir",
        str(tmp_path / "r"),
        "--max-env-steps",
        "256",
        "--learning-rate",
        "1e-3",
        "--n-epochs",
        "2",
        *SMALL[2:],
    )
    assert out.returncode == 0, out.stderr
    assert "not solved" in out.stdout and "256 env steps" in out.stdout
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert result["envstep"] == 256
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["policy"]["learn"]["learning_rate"] == 1e-3
    assert cfg["policy"]["learn"]["n_epochs"] == 2
    assert cfg["max_env_step"] == 256
    assert cfg["env"]["num_envs"] == 4 and cfg["policy"]["learn"]["batch_size"] == 32


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-c", "cartpol"], "unknown experiment 'cartpol'"),
        (["-c", "cartpole_ppo", "env.name=cartpol"], "unknown env 'cartpol'"),
        (["-c", "cartpole_ppo", "policy.learn.lr=1"], "unknown config key 'policy.learn.lr'"),
        (["-c", "cartpole_ppo", "env.num_envs=many"], "must be int"),
        (
            ["-c", "cartpole_ppo", "learner.hook.load_ckpt_before_run=/no/such.pt"],
            "checkpoint not found",
        ),
        (["-c", "cartpole_ppo", "--device", "cuda:7"], "device 'cuda:7' asked for but"),
        (["--resume", "/no/such/dir"], "cannot resume"),
    ],
)
def test_bad_input_is_one_line_error(tmp_path, args, message):
    out = run_cli("serial", "--exp-dir", str(tmp_path / "r"), "-q", *args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_corrupt_checkpoint_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    out = run_cli(
        "serial",
        "-c",
        "cartpole_ppo",
        "-q",
        "--exp-dir",
        str(tmp_path / "r"),
        f"learner.hook.load_ckpt_before_run={bad}",
        *SMALL,
    )
    assert out.returncode == 2
    assert "cannot read checkpoint" in out.stderr and "Traceback" not in out.stderr


def test_no_command_prints_help():
    out = run_cli()
    assert out.returncode == 2 and "serial" in out.stdout


def test_eval_command(tmp_path):
    train = run_cli(
        "serial",
        "-c",
        "cartpole_ppo",
        "-q",
        "--exp-dir",
        str(tmp_path / "r"),
        "--max-train-iter",
        "2",
        *SMALL,
    )
    assert train.returncode == 0, train.stderr
    out = run_cli(
        "eval", "-c", "cartpole_ppo", "--ckpt", str(tmp_path / "r" / "ckpt"), "--episodes", "5"
    )
    assert out.returncode == 0, out.stderr
    assert "(iteration 2)" in out.stdout and "over 5 episodes" in out.stdout
    assert "win " not in out.stdout  # CartPole reports no outcomes
    bad = run_cli("eval", "-c", "pendulum_ppo", "--ckpt", str(tmp_path / "r" / "ckpt"))
    assert bad.returncode == 2 and "does not fit this experiment" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = run_cli("eval", "-c", "cartpole_ppo", "--ckpt", str(tmp_path / "nope.pt"))
    assert missing.returncode == 2 and "checkpoint not found" in missing.stderr


@pytest.mark.parametrize(
    "outcome, code",
    [
        ("solved", 0),
        ("max_train_iter", 0),
        ("stalled", 1),
        ("no_collectors", 1),
        ("learner_failed", 1),
        ("diverged", 1),
        ("disk_full", 1),
        ("SIGINT", 130),
        ("SIGTERM", 143),
    ],
)
def test_parallel_and_coordinator_exit_with_the_code_of_their_stop_reason(
    monkeypatch, capsys, outcome, code
):
    """The pipelines are replaced by their outcome: this checks the command's mapping."""
    import ding_lite.entry.pipelines.parallel as parallel
    from ding_lite.entry.cli.command import main
    from ding_lite.utils.stop import RunInterrupted

    def finish(*args, **kwargs):
        if outcome.startswith("SIG"):
            raise RunInterrupted(outcome)  # raised after the result was written
        figures = dict(solved=False, eval_return_mean=None, envstep=0, train_iter=0)
        return {**figures, "wall_s": 1.0, "sps": 0.0, "stop_reason": outcome, "exp_dir": "x"}

    monkeypatch.setattr(parallel, "parallel_pipeline", finish)
    monkeypatch.setattr(parallel, "compile_parallel_config", lambda *a, **k: None)
    monkeypatch.setattr(parallel, "run_coordinator", finish)
    assert main(["parallel", "-c", "cartpole_ppo_parallel", "-q"]) == code
    assert main(["coordinator", "-c", "cartpole_ppo_parallel", "-q"]) == code
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    if not outcome.startswith("SIG"):  # -q: the summary's last line only, for both
        assert out.out == "run dir: x\nrun dir: x\n"


@pytest.mark.parametrize("fd", ["99", "0"])  # not open; open but not a socket (stdin)
def test_supervised_with_a_descriptor_that_is_no_link_is_one_line(tmp_path, fd):
    out = run_cli("coordinator", "--supervised", fd, "--resume", str(tmp_path), "--port", "1")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == (
        f"ding-lite: error: --supervised {fd}: not a socket this process inherited (it is "
        "given by ding-lite parallel, which starts the coordinator)\n"
    )


def test_serial_config_error_vs_divergence_exit_codes(tmp_path):
    bad = run_cli("serial", "-c", "cartpole_ppo", "--exp-dir", str(tmp_path / "a"),
                  "--learning-rate", "1e39", *SMALL)  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "policy.learn.learning_rate" in bad.stderr and "float32" in bad.stderr
    assert not (tmp_path / "a").exists()
    run = tmp_path / "b"
    diverged = run_cli("serial", "-c", "cartpole_ppo", "-q", "--exp-dir", str(run),
                       "--max-train-iter", "5", "--learning-rate", "1e30",
                       "policy.learn.max_skipped_steps=4", *SMALL)  # fmt: skip
    assert diverged.returncode == 1, diverged.stderr
    (line,) = diverged.stderr.strip().splitlines()
    assert line.startswith("ding-lite: error: diverged:")
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "diverged" and result["skipped_steps"] >= 4
    assert result["restarts"] == 0 and result["train_iter"] < 5
