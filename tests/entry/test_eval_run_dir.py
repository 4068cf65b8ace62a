"""``ding-lite eval RUN_DIR`` and the ``--ckpt`` forms: which config and checkpoint they read."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from ding_lite.entry.cli.command import main

EVAL = ["--episodes", "2"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A one-iteration cartpole run dir with ckpt/best.pt and a periodic checkpoint."""
    run = tmp_path_factory.mktemp("eval") / "run"
    small = ["env.num_envs=4", "policy.collect.n_steps=16", "evaluator.n_episodes=2"]
    args = ["serial", "-c", "cartpole_ppo", "-q", "--exp-dir", str(run), "--max-train-iter", "1"]
    assert main([*args, *small]) == 0
    assert (run / "ckpt" / "best.pt").is_file()
    return run


def test_eval_a_run_dir_reads_its_config_and_best_checkpoint(run_dir, capsys):
    assert main(["eval", str(run_dir), *EVAL]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{run_dir / 'ckpt' / 'best.pt'} (iteration 1): return ")


def test_eval_a_run_dir_without_best_takes_the_newest_and_says_so(run_dir, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    (copy / "ckpt" / "best.pt").unlink()
    assert main(["eval", str(copy), *EVAL, "env.num_envs=2"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.startswith("no best.pt in ") and "evaluating the newest checkpoint" in first
    assert second.startswith(str(copy / "ckpt" / "ckpt_iter"))


@pytest.mark.parametrize("form", ["run dir", "ckpt folder"])
def test_ckpt_takes_the_newest_checkpoint_of_a_run_dir_or_its_folder(run_dir, capsys, form):
    path = run_dir if form == "run dir" else run_dir / "ckpt"
    assert main(["eval", "--ckpt", str(path), *EVAL]) == 0  # no -c: the run's config.json
    assert capsys.readouterr().out.startswith(str(run_dir / "ckpt" / "ckpt_iter"))
    assert main(["eval", "-c", "cartpole_ppo", "--ckpt", str(path), *EVAL]) == 0


def test_a_missing_run_dir_is_one_line(tmp_path):
    for args in (
        ["eval", str(tmp_path / "nothing")],
        ["eval"],
        ["eval", "--ckpt", str(tmp_path / "x")],
    ):
        out = subprocess.run(
            [sys.executable, "-m", "ding_lite", *args], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert out.stderr.startswith("ding-lite: error: ")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["eval", str(empty)]) == 2  # no checkpoint, no config.json
