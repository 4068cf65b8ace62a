"""Fixtures of the entry tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ding_lite import serial_pipeline


@pytest.fixture(scope="session")
def aircombat_ckpt(tmp_path_factory) -> Path:
    """The ``ckpt/`` folder of a one-iteration aircombat_ppo run (a real checkpoint, cheaply)."""
    run = tmp_path_factory.mktemp("aircombat") / "run"
    serial_pipeline(
        "aircombat_ppo",
        max_train_iter=1,
        overrides=[
            "env.num_envs=8",
            "policy.collect.n_steps=8",
            "evaluator.n_episodes=4",
            "policy.learn.batch_size=64",
        ],
        exp_dir=str(run),
    )
    return run / "ckpt"
