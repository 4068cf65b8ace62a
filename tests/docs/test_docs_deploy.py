"""docs/deploy.rst: its Python example runs on freshly exported files, and ``ding-lite
export`` prints what the page shows."""

from __future__ import annotations

import re

import pytest
from helpers import DOCS, tiny

from ding_lite import serial_pipeline
from ding_lite.entry.cli.command import main

pytestmark = pytest.mark.slow

PAGE = (DOCS / "deploy.rst").read_text(encoding="utf-8")


def test_python_example_plays_exported_policies(tmp_path, monkeypatch, capsys, docs_code):
    monkeypatch.chdir(tmp_path)
    for name, extra in (
        ("cartpole_ppo", []),
        ("pendulum_lstm_ppo", ["policy.learn.bptt_horizon=8"]),
    ):
        overrides = tiny("policy.learn.n_epochs=1", *extra)
        serial_pipeline(name, seed=0, overrides=overrides, exp_dir=name, max_train_iter=1)
    capsys.readouterr()
    # The page's first command, and what it prints (but the iteration) as the page shows it.
    assert main(["export", "cartpole_ppo", "--format", "onnx", "--out", "cartpole.onnx"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].endswith("(iteration 1)")
    shown = [line.strip() for line in PAGE.splitlines()]
    for line in printed:
        assert re.sub(r"iteration \d+", "iteration 24", line).strip() in shown, line
    assert main(["export", "pendulum_lstm_ppo", "--out", "pendulum_lstm.onnx"]) == 0
    capsys.readouterr()

    exec(docs_code("deploy.rst", "deploy-python-example"), {"__name__": "docs_deploy"})
    returns = re.findall(r"^return (\S+)$", capsys.readouterr().out, flags=re.M)
    assert len(returns) == 2  # CartPole's (at least a step), then the pendulum's (negative)
    assert float(returns[0]) >= 1 and float(returns[1]) < 0
