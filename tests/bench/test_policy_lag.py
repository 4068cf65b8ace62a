"""bench/policy_lag.py: the command of each mode, the summary's arithmetic, and one tiny
serial run through the script's own runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "policy_lag.py"


bench = load_bench("policy_lag")


def _overrides(cmd: list[str]) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in cmd if "=" in arg and not arg.startswith("-"))


@pytest.mark.parametrize("task", ["halfcheetah", "pendulum"])
def test_commands_of_each_mode(task, tmp_path):
    exp, num_envs = {"halfcheetah": ("mujoco_ppo", 8), "pendulum": ("pendulum_ppo", 16)}[task]
    eval_freq = {"halfcheetah": "10", "pendulum": "5"}[task]
    for mode in bench.MODES:
        cmd = bench.command(task, mode, 3, tmp_path / "run")
        assert cmd[:3] == [sys.executable, "-m", "ding_lite"]
        assert cmd[3] == ("serial" if mode.startswith("serial") else "parallel")
        # The asynchronous modes run the bundled parallel experiment, corrections and all.
        want = f"{exp}_parallel" if mode.startswith("async") else exp
        assert cmd[cmd.index("-c") + 1] == want
        assert cmd[cmd.index("--exp-dir") + 1] == str(tmp_path / "run")
        assert cmd[cmd.index("--seed") + 1] == "3" and "-q" in cmd
        collectors = {"sync-1c": "1", "async-1c": "1", "async-2c": "2"}.get(mode)
        if collectors is None:
            assert "--collectors" not in cmd
        else:
            assert cmd[cmd.index("--collectors") + 1] == collectors
        overrides = _overrides(cmd)
        assert overrides["evaluator.eval_freq"] == eval_freq
        assert ("system.sync_collect" in overrides) == (mode == "sync-1c")
        if mode == "sync-1c":
            assert overrides["system.sync_collect"] == "true"
        if mode == "async-2c":
            assert overrides["env.num_envs"] == str(num_envs // 2)
        elif mode.startswith("serial"):
            assert "env.num_envs" not in overrides
        else:  # one collector with all of serial's copies
            assert overrides["env.num_envs"] == str(num_envs)
        if task == "halfcheetah":
            assert overrides["evaluator.stop_value"] == "1500"
            assert overrides["env.name"] == "gym:HalfCheetah-v5"
        else:
            assert "evaluator.stop_value" not in overrides


def test_task_table_matches_the_experiments():
    from ding_lite.config.experiments.mujoco_ppo import config as mujoco
    from ding_lite.config.experiments.pendulum_ppo import config as pendulum

    for task, config in (("halfcheetah", mujoco), ("pendulum", pendulum)):
        exp, num_envs, n_steps, _, _ = bench.TASKS[task]
        assert exp == config["exp_name"]
        assert (num_envs, n_steps) == (
            config["env"]["num_envs"],
            config["policy"]["collect"]["n_steps"],
        )
    assert pendulum["evaluator"]["stop_value"] == -200.0


def test_extra_overrides_win_and_set_the_cadence(tmp_path):
    extra = ["env.num_envs=4", "policy.collect.n_steps=32", "max_train_iter=2"]
    serial = _overrides(bench.command("pendulum", "serial", 0, tmp_path, extra))
    assert serial["env.num_envs"] == "4" and serial["max_train_iter"] == "2"
    assert serial["evaluator.eval_freq"] == str(20480 // (4 * 32))
    two = bench.command("pendulum", "async-2c", 0, tmp_path, extra)
    assert [a for a in two if a.startswith("env.num_envs=")] == ["env.num_envs=2"]
    with pytest.raises(ValueError, match="odd"):
        bench.command("pendulum", "async-2c", 0, tmp_path, ["env.num_envs=3"])


def _row(mode, seed, envstep, wall, solved=True, **kw):
    result = {
        "solved": solved,
        "envstep": envstep,
        "train_iter": envstep // 4096,
        "wall_s": wall - 1,
        "gradient_steps": envstep // 100,
        **kw,
    }
    return bench.row_from_result("pendulum", mode, seed, result, wall, timestamp="t")


def test_row_from_result_reads_the_new_fields_or_none():
    row = _row("async-1c", 0, 40960, 30.0, policy_lag_mean=0.9, policy_lag_max=2)
    assert row["policy_lag_mean"] == 0.9 and row["policy_lag_max"] == 2
    assert row["dropped_env_steps"] is None  # not in result.json
    assert row["grad_steps_per_1k"] == pytest.approx(409 * 1000 / 40960, abs=1e-3)
    assert row["in_run_s"] == 29.0 and row["wall_s"] == 30.0
    old = bench.row_from_result("pendulum", "serial", 0, {"envstep": 10, "solved": 1}, 2.0)
    assert old["gradient_steps"] is None and old["grad_steps_per_1k"] is None
    failed = bench.row_from_result("pendulum", "sync-1c", 0, None, 1.0, error="exit 2: no")
    assert failed["envstep"] is None and not failed["solved"]
    assert "FAILED" in bench.run_line(failed) and "solved" in bench.run_line(row)


def _table_row(text: str, label: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(label))
    rest = line[18:]
    return [rest[i : i + 30].strip() for i in range(0, len(rest), 30)]


def test_summarize_medians_ratios_and_unsolved():
    rows = [
        _row("serial", 0, 40960, 100.0),
        _row("serial", 1, 81920, 200.0),
        _row("serial", 2, 61440, 150.0),
        _row("async-2c", 0, 81920, 100.0),
        _row("async-2c", 1, 500000, 400.0, solved=False),
        _row("async-2c", 2, 122880, 300.0),
        bench.row_from_result("pendulum", "sync-1c", 0, None, 1.0, error="exit 2"),
    ]
    text = bench.summarize(rows)
    assert _table_row(text, "solved") == ["3/3", "0/0 (1 failed)", "2/3"]
    assert _table_row(text, "env steps ") == [
        "61,440 [40,960-81,920]",
        "-",
        "122,880 [81,920-500,000]*",
    ]
    assert _table_row(text, "wall s")[0] == "150 [100-200]"
    assert _table_row(text, "wall s")[2] == "300 [100-400]*"
    assert _table_row(text, "env steps/serial") == ["1.00", "-", "2.00"]
    assert _table_row(text, "wall/serial") == ["1.00", "-", "2.00"]
    assert "1:500,000+" in text and "did not reach the target" in text
    assert "(failed: 0)" in text
    assert bench.summarize([]) == "no runs"


def test_select_since():
    rows = [
        {"commit": "aaa", "timestamp": "2025-01-01T00:00:00"},
        {"commit": "bbb", "timestamp": "2025-02-01T00:00:00"},
        {"commit": "ccc", "timestamp": "2025-03-01T00:00:00"},
    ]
    assert bench.select(rows, "bbb") == rows[1:]
    assert bench.select(rows, "2025-03") == rows[2:]
    assert bench.select(rows, None) == rows


def test_plan_alternates_modes():
    order = bench.plan(["pendulum"], [0, 1], ["serial", "async-1c"])
    assert order == [
        ("pendulum", 0, "serial"),
        ("pendulum", 0, "async-1c"),
        ("pendulum", 1, "async-1c"),
        ("pendulum", 1, "serial"),
    ]


def test_tiny_serial_run_writes_a_row(tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    extra = [
        "max_train_iter=2",
        "env.num_envs=2",
        "policy.collect.n_steps=32",
        "evaluator.n_episodes=2",
    ]
    argv = ["--tasks", "pendulum", "--modes", "serial", "--seeds", "0", "--out", str(out)]
    argv += ["--tmp-dir", str(tmp_path)] + [f"--extra={item}" for item in extra]
    bench.main(argv)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["error"] is None, row["error"]
    assert (row["task"], row["mode"], row["seed"]) == ("pendulum", "serial", 0)
    assert row["train_iter"] == 2 and row["envstep"] == 2 * 2 * 32
    assert row["solved"] is False and row["wall_s"] > 0 and row["in_run_s"] is not None
    assert row["extra"] == extra and row["cores"] >= 1
    printed = capsys.readouterr().out
    assert "pendulum    serial   seed  0: NOT solved" in printed
    assert "pendulum (pendulum_ppo, target -200)" in printed
    if row["policy_lag_max"] is not None:  # once result.json reports them: serial lags 0
        assert row["policy_lag_max"] == 0 and row["dropped_env_steps"] == 0
        assert row["gradient_steps"] > 0 and row["grad_steps_per_1k"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]
    bench.main(["--summary-only", "--out", str(out)])
    assert capsys.readouterr().out.startswith("pendulum (pendulum_ppo, target -200), seeds 0")
