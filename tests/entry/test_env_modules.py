"""Nothing is imported because a start task or a file in a run dir names it (issue 40,
finding 10); a user's own env module, allowed on the command line, still trains.

Every hostile module here writes a marker file when imported; the marker must never appear.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TOKEN, wait_for

from ding_lite.config import compile_config, to_plain
from ding_lite.interaction import Master

ENVS = Path(__file__).resolve().parents[1] / "envs"  # gym_corridor.py: a user's env module
PWN = "import pathlib\npathlib.Path({marker!r}).write_text('imported')\n"
SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=64",
    "policy.learn.n_epochs=1",
    "evaluator.n_episodes=2",
    "evaluator.stop_value=none",
]
FAST = ["system.heartbeat_period=0.2", "system.heartbeat_tolerance=3.0", "system.task_timeout=30"]


def plant(folder: Path, marker: Path, *names: str) -> None:
    """Hostile modules ``names`` in ``folder``: importing one writes ``marker``."""
    for name in names:
        (folder / f"{name}.py").write_text(PWN.format(marker=str(marker)))


def ding_lite(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 150):
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", *args],
        cwd=cwd,
        env=dict(os.environ, **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ding-lite: error: "), done.stderr
    return lines[0]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_run_dir_makes_python_m_ding_lite_import_none_of_its_files(tmp_path):
    run, marker = tmp_path / "run", tmp_path / "MARKER"
    trained = ding_lite(
        "serial", "-c", "cartpole_ppo", "-q", "--max-train-iter", "1", "--exp-dir", str(run),
        *SMALL, cwd=tmp_path,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert trained.stdout == f"run dir: {run}\n"  # -q: the summary's last line only
    # A run dir someone else prepared: its config names a module of its own, and a module
    # of the command's own (yaml) sits beside it.
    saved = json.loads((run / "config.json").read_text())
    saved["env"]["name"] = "gym:pwn_mod:CartPole-v1"
    (run / "config.json").write_text(json.dumps(saved))
    plant(run, marker, "pwn_mod", "yaml")

    evaluated = ding_lite("eval", ".", "--episodes", "2", cwd=run)
    assert one_error_line(evaluated) == (
        "ding-lite: error: env.name 'gym:pwn_mod:CartPole-v1' names module 'pwn_mod', which "
        "this process was not allowed to import: ding_lite imports only the modules its own "
        "command line or config names (--import pwn_mod)"
    )
    resumed = ding_lite("serial", "--resume", ".", cwd=run)
    assert one_error_line(resumed) == (
        "ding-lite: error: --resume .: its config.json names env module(s) 'pwn_mod', and "
        "ding_lite imports no module a run dir names: pass --import pwn_mod (import_modules= "
        "from Python) to import them"
    )
    assert not marker.exists()


@pytest.mark.timeout(120)
def test_real_workers_refuse_start_tasks_naming_a_module_or_a_file(tmp_path):
    """A token holder's start tasks: the module is importable where the workers run (their
    folder and PYTHONPATH), yet neither worker imports it, and each answers one line."""
    mods, marker = tmp_path / "mods", tmp_path / "MARKER"
    mods.mkdir()
    plant(mods, marker, "pwn_mod")
    master = Master(token=TOKEN, heartbeat_tolerance=10.0, task_timeout=60.0).start()
    env = dict(os.environ, PYTHONPATH=str(mods), DING_LITE_TOKEN=TOKEN)
    procs = {}
    try:
        for role in ("learner", "collector"):
            log = open(tmp_path / f"{role}.log", "w")  # noqa: SIM115 (the child owns it)
            cmd = [sys.executable, "-m", "ding_lite", role, "--coordinator", master.address]
            cmd += ["--worker-id", f"{role}-t", "--heartbeat-period", "0.2"]
            procs[role] = subprocess.Popen(
                cmd, cwd=mods, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
            )
            log.close()
        assert wait_for(lambda: len(master.worker_ids()) == 2, 60), master.worker_ids()

        base = compile_config("cartpole_ppo_parallel", [f"exp_dir={tmp_path / 'run'}"])
        configs = {
            "env.name": to_plain(compile_config(base, ["env.name=gym:pwn_mod:CartPole-v1"])),
            "env.import_modules": to_plain(compile_config(base, ["env.import_modules=[pwn_mod]"])),
            "a file": str(mods / "pwn_mod.py"),  # would run it, as a -c FILE.py does
        }
        for role in ("learner", "collector"):
            for what, config in configs.items():
                data = {"config": config, "seed": 0}
                outcome = master.send_task(f"{role}-t", f"{role}_start_task", data)
                assert not outcome.success, (role, what)
                assert outcome.error.startswith("ConfigError: ") and "\n" not in outcome.error
                if what == "a file":
                    assert "the config sent must be a JSON object" in outcome.error
                else:
                    assert "names module 'pwn_mod'" in outcome.error, outcome.error
                    assert "--import pwn_mod" in outcome.error
        assert not marker.exists()
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=30) for proc in procs.values()]
        master.stop()
    assert codes == [130, 130]
    for role in procs:
        assert "Traceback" not in (tmp_path / f"{role}.log").read_text()
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_parallel_trains_a_users_env_module_named_on_its_command_line(tmp_path):
    """``gym:gym_corridor:Corridor-v0``: the launcher imports the module and starts every
    worker with ``--import gym_corridor``; resuming needs ``--import`` again."""
    run = tmp_path / "run"
    env = {"PYTHONPATH": str(ENVS)}
    args = ["-c", "cartpole_ppo_parallel", "env.name=gym:gym_corridor:Corridor-v0"]
    args += ["--max-train-iter", "2", "system.collectors=1", *SMALL, *FAST]
    done = ding_lite("parallel", "-q", "--exp-dir", str(run), *args, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == f"run dir: {run}\n"  # -q: the summary's last line only
    result = json.loads((run / "result.json").read_text())
    assert result["env"] == "gym:gym_corridor:Corridor-v0" and result["train_iter"] == 2
    for worker in ("learner0", "collector0"):
        log = (run / "logs" / f"{worker}.log").read_text()
        assert "not allowed to import" not in log and "Traceback" not in log, log[-2000:]

    again = ding_lite("parallel", "--resume", str(run), cwd=tmp_path, env=env)
    assert "--import gym_corridor" in one_error_line(again)
