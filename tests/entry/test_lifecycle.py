"""The run lifecycle both pipelines share: options, result.json and the closing summary."""

from __future__ import annotations

import json
import re

import pytest

from ding_lite import parallel_pipeline, serial_pipeline
from ding_lite.coordinator import RunStatus
from ding_lite.entry.pipelines import coordinator_process, parallel, serial
from ding_lite.entry.reporting import run_report
from ding_lite.entry.run.result import round_figure, summary

SMALL = ["env.num_envs=4", "policy.collect.n_steps=16", "evaluator.n_episodes=2"]
# The first line of every summary, serial or parallel.
FIRST_LINE = re.compile(
    r"^(solved|not solved \(\w+\)): eval return (-|-?[\d.]+ over \d+ episodes)"
    r"( \(win rate [\d.]+%\))?, \d+ env steps, \d+ iterations, [\d.]+ s \([\d,]+ SPS\)"
    r"(, \d+ restart\(s\))?$"
)


def test_one_summary_function_serves_both_pipelines():
    assert serial.summary is parallel.summary is coordinator_process.summary is summary
    assert run_report.summary is summary


def _check_summary(out: str, run_dir) -> list[str]:
    lines = out.strip().splitlines()
    assert lines[-1] == f"run dir: {run_dir}", out
    first = next(i for i, line in enumerate(lines) if FIRST_LINE.match(line))
    return lines[first:]


def test_serial_and_parallel_print_the_same_summary(tmp_path, capsys, monkeypatch):
    run = serial_pipeline(
        "cartpole_ppo", max_train_iter=1, overrides=SMALL, exp_dir=str(tmp_path / "s")
    )
    lines = _check_summary(capsys.readouterr().out, run.run_dir)
    assert len(lines) == 2 and " over 2 episodes, 64 env steps, 1 iterations" in lines[0]
    assert lines[0].startswith("not solved (max_train_iter): ")

    def fake_run(cfg, run_dir, say, interval, register):
        status = RunStatus(envstep=512, train_iter=2, eval_return=21.5, stop_reason="stalled")
        status.stop_detail, status.ledger = "no iteration for 300 s", {"trained": 8}
        result = run_report.run_result(cfg, status, 1.0)
        run_dir.write_result(result)
        return result, False

    monkeypatch.setattr(parallel, "_run", fake_run)
    result = parallel_pipeline("cartpole_ppo_parallel", exp_dir=str(tmp_path / "p"))
    lines = _check_summary(capsys.readouterr().out, tmp_path / "p")
    assert lines[0].startswith("not solved (stalled): eval return 21.50 over ")
    assert f"over {result['eval_episodes']} episodes, 512 env steps" in lines[0]
    assert lines[1:] == [
        "stopped: no iteration for 300 s",
        "rollouts: trained 8",
        f"run dir: {tmp_path / 'p'}",
    ]


def test_verbose_0_prints_nothing(tmp_path, capsys):
    serial_pipeline(
        "cartpole_ppo", max_train_iter=1, overrides=SMALL, exp_dir=str(tmp_path), verbose=0
    )
    assert capsys.readouterr().out == ""


def test_both_pipelines_take_the_config_then_keywords_only(tmp_path):
    with pytest.raises(TypeError, match=r"only positional argument.*max_env_step"):
        serial_pipeline("cartpole_ppo", 0, 1000)
    with pytest.raises(TypeError, match=r"only positional argument"):
        parallel_pipeline("cartpole_ppo_parallel", 0)
    with pytest.raises(TypeError, match=r"collectors \(parallel_pipeline only\)"):
        serial_pipeline("cartpole_ppo", collectors=2)
    with pytest.raises(TypeError, match=r"unexpected keyword argument total_timesteps"):
        parallel_pipeline("cartpole_ppo_parallel", total_timesteps=10)
    assert not list(tmp_path.iterdir())


def test_result_json_figures_are_rounded_in_one_place(tmp_path):
    assert [round_figure(x) for x in (487.123456, 0.000123456, 0.623456, 12345.6789, 0.0)] == [
        487.123,
        0.0001235,
        0.6235,
        12345.679,
        0.0,
    ]
    serial_pipeline(
        "cartpole_ppo", max_train_iter=1, overrides=SMALL, exp_dir=str(tmp_path), verbose=0
    )
    result = json.loads((tmp_path / "result.json").read_text())
    for key, value in result.items():
        if isinstance(value, float):
            assert value == round_figure(value), key


def test_progress_prints_a_first_line_at_once_and_sps_of_this_run_only(capsys):
    from ding_lite.entry.reporting.progress import Progress

    bar = Progress(1000, enabled=True, interval=60.0, start=500)  # a run resumed at 500
    bar.update(600, 3, 1.0, None)
    bar.update(700, 4, 1.0, None)  # within the interval: no second line
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("envstep=600 iter=3 SPS=")
    sps = float(line.split("SPS=")[1].split()[0].replace(",", ""))
    assert sps > 0  # counted from 100 steps of this run, not 600


def test_an_interrupted_run_records_its_real_sps(tmp_path):
    from ding_lite.utils.stop import RunInterrupted

    run = tmp_path / "run"
    original = serial.BaseLearner.train

    def train_then_ctrl_c(self, data, envstep):
        info = original(self, data, envstep)
        if self.train_iter == 2:
            raise KeyboardInterrupt
        return info

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(serial.BaseLearner, "train", train_then_ctrl_c)
        with pytest.raises(RunInterrupted):
            serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(run), verbose=0)
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "interrupted" and result["sps"] > 0


@pytest.mark.parametrize(
    "name", ["cartpole_ppo", "cartpole_ppo_1", "gym_ppo_12", "pendulum_ppo_parallel_2"]
)
def test_gitignore_matches_every_run_dir_a_run_may_choose(name):
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("needs a git checkout")
    check = subprocess.run(["git", "check-ignore", "-q", f"{name}/result.json"], cwd=root)
    assert check.returncode == 0, f"{name}/ is not ignored"


def test_sps_of_a_resumed_run_counts_only_the_steps_it_made(tmp_path, monkeypatch):
    run = tmp_path / "run"
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(run), max_env_step=256, verbose=0)
    meters = []

    class RecordingMeter(serial._SpsMeter):
        def __init__(self, envstep: int) -> None:
            super().__init__(envstep)
            meters.append(self)

    monkeypatch.setattr(serial, "_SpsMeter", RecordingMeter)
    serial_pipeline(resume=str(run), max_env_step=512, verbose=0)
    (meter,) = meters
    assert (meter._envstep0, meter.envstep) == (256, 512)  # the resumed part only
    clock = iter([10.0, 12.0])
    monkeypatch.setattr(serial.time, "perf_counter", lambda: next(clock))
    meter = serial._SpsMeter(256)
    meter.envstep = 512
    assert meter.sps() == 128.0  # 256 steps of this run in 2 s, not 512
