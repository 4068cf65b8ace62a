"""bench/zoo.py: which runs make the table, its figures and ratios, the docs region it
writes, and one tiny run through the script's own runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "zoo.py"


bench = load_bench("zoo")


def row(experiment, seed, value, trainer="ding_lite", **extra):
    if trainer == "ding_lite":
        extra.setdefault("settings", bench.settings_id(experiment))
    return {"trainer": trainer, "experiment": experiment, "seed": seed, "eval_return": value,
            "wall_s": 10.0 * (seed + 1), **extra}  # fmt: skip


def test_ratio_is_above_one_when_better_for_rewards_and_for_costs():
    assert bench.better_ratio(300.0, 150.0) == 2.0
    assert bench.better_ratio(-100.0, -200.0) == 2.0  # a smaller cost is better
    assert bench.better_ratio(-400.0, -200.0) == 0.5
    assert bench.better_ratio(10.0, -200.0) == float("inf")


def test_the_table_uses_seeds_0_to_2_without_overrides_and_says_what_is_missing():
    rows = [
        row("zoo_pendulum", 0, -180.0),
        row("zoo_pendulum", 1, -160.0),
        row("zoo_pendulum", 2, -170.0),
        row("zoo_pendulum", 10, -500.0),  # a tuning seed
        row("zoo_pendulum", 0, -900.0, overrides=["policy.learn.n_epochs=1"]),  # a variant
        row("zoo_pendulum", 1, 0.0, error="did not finish within 5 s"),
        row("zoo_pendulum", 2, -999.0, settings="0123456789ab"),  # settings retuned since
        row("zoo_pendulum", 0, -190.0, trainer="sb3"),
        row("zoo_ant", 0, 2000.0),
    ]
    lines = bench.table(rows)
    pendulum = next(x for x in lines if x.startswith("Pendulum-v1 "))
    assert "-170.0 [-180.0, -160.0]" in pendulum
    assert "-172.2 (Pendulum-v1)" in pendulum and " 1.01 " in pendulum  # -172.2 / -170
    assert "-190.0 (1.12x)" in pendulum  # SB3's median and ding_lite's ratio to it
    ant = next(x for x in lines if x.startswith("Ant-v5 "))
    assert "2000.0 [2000.0, 2000.0] (1 seeds)" in ant
    assert "(not measured)" in next(x for x in lines if x.startswith("Hopper-v5 "))
    assert len([x for x in lines if "-v" in x]) == 11  # one line per zoo experiment


def test_write_docs_replaces_only_the_marked_region(tmp_path, monkeypatch):
    page = tmp_path / "benchmarks.rst"
    page.write_text("before\n\n.. begin zoo table\nold\n.. end zoo table\n\nafter\n")
    monkeypatch.setattr(bench, "DOCS", page)
    bench.write_docs(["a b", "c d"])
    text = page.read_text()
    assert text.startswith("before\n\n.. begin zoo table\n\n::\n\n    a b\n    c d\n")
    assert text.endswith("\n.. end zoo table\n\nafter\n") and "old" not in text
    page.write_text("no region here\n")
    with pytest.raises(SystemExit, match="no '.. begin zoo table'"):
        bench.write_docs(["x"])


def test_a_run_through_the_scripts_runner_reads_its_result(tmp_path, monkeypatch):
    monkeypatch.chdir(BENCH.parents[1])  # python -m ding_lite from the checkout
    figures = bench.run_ding_lite(
        "zoo_mountaincar_continuous", 0, ["max_env_step=16", "evaluator.n_episodes=1"], 120
    )
    assert figures["envstep"] == 16 and figures["eval_episodes"] == 1
    assert isinstance(figures["eval_return"], float) and figures["wall_s"] > 0
    failed = bench.run_ding_lite("zoo_mountaincar_continuous", 0, ["no.such_key=1"], 120)
    assert "unknown config key" in failed["error"]


def test_a_second_experiment_name_without_a_comma_is_refused_before_any_run(tmp_path):
    results = tmp_path / "results.jsonl"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--experiments", "zoo_mountaincar", "zoo_ant",
         "--results", str(results)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "zoo.py: error: 'zoo_ant' is not a config override (key.sub=value); name several "
        "experiments with commas: --experiments zoo_ant,zoo_swimmer"
    )
    assert not results.exists()  # nothing ran, nothing was written
