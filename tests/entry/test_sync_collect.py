"""Synchronous collection (``system.sync_collect``) is serial's algorithm in the parallel
pipeline: one collector with serial's env copies, one torch thread and the same seed gives
the same learn info, iteration by iteration, and no collector rolls out with an old policy.

Both runs are the CLI commands a user types, in fresh processes with ``OMP_NUM_THREADS=1``;
the learn info is read back from each run's tensorboard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ding_lite.utils.log import read_tb_events
from ding_lite.utils.paths import parse_rollout_path

pytestmark = pytest.mark.timeout(240)

ITERS = 5
SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=64",
    "policy.learn.batch_size=64",
    "policy.learn.n_epochs=2",
    "evaluator.eval_freq=100",
    "evaluator.n_episodes=2",
]
#: The learn info compared: losses, KL, gradient norm and the batch's statistics.
COMPARED = (
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clipfrac",
    "grad_norm",
    "explained_variance",
    "advantage_mean",
    "reward_mean",
)


def _run(args: list[str], exp_dir: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "ding_lite", *args, "--exp-dir", str(exp_dir), "-q"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((exp_dir / "result.json").read_text())


def _learn_info(tb_dir: Path) -> dict[str, list[float]]:
    """Each compared learn-info tag's values in iteration order."""
    scalars: dict[str, list[tuple[int, float, float]]] = {}
    for path in sorted(tb_dir.glob("events.out.tfevents.*")):
        for tag, rows in read_tb_events(path).items():
            scalars.setdefault(tag, []).extend(rows)
    picked = {}
    for tag, rows in scalars.items():
        name = tag.rsplit("/", 1)[-1]
        if name in COMPARED:
            picked[name] = [value for _, value, _ in sorted(rows, key=lambda r: r[2])]
    return picked


def test_one_sync_collector_computes_what_serial_computes(tmp_path):
    common = ["-c", "pendulum_ppo", "--seed", "3", "--max-train-iter", str(ITERS), *SMALL]
    serial = _run(["serial", *common], tmp_path / "serial")
    parallel = _run(
        ["parallel", *common, "--collectors", "1", "system.sync_collect=true"],
        tmp_path / "sync",
    )
    assert serial["train_iter"] == parallel["train_iter"] == ITERS
    assert parallel["dropped_env_steps"] == 0 and parallel["policy_lag_max"] == 0
    assert serial["gradient_steps"] == parallel["gradient_steps"] > 0
    want = _learn_info(tmp_path / "serial" / "tb")
    got = _learn_info(tmp_path / "sync" / "tb" / "learner0")
    assert set(want) == set(COMPARED), sorted(want)
    for name in COMPARED:
        assert len(want[name]) == len(got[name]) == ITERS, name
        for i, (a, b) in enumerate(zip(want[name], got[name], strict=True)):
            assert abs(a - b) <= 1e-6 * max(1.0, abs(a)), f"{name} at iteration {i + 1}: {a} != {b}"


def test_sync_collectors_never_roll_out_with_an_older_version(tmp_path):
    """Two collectors. A watcher lists the rollout files as they appear (a file's name holds
    the policy version that collected it): the k-th rollout of each collector is collected
    by version k, the one the learner publishes after training on the (k-1)-th of both.
    The learner trains every file at lag 0 and drops none."""
    exp_dir = tmp_path / "sync2"
    data = tmp_path / "data"
    args = ["-c", "pendulum_ppo", "--seed", "1", "--max-train-iter", "6", *SMALL]
    args += ["--collectors", "2", "system.sync_collect=true", "system.max_policy_lag=0"]
    args += [f"system.path_data={data}"]
    seen: dict[str, tuple[int, int]] = {}  # path -> (seq, version)
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                paths = list(data.glob("*/*.pt"))
            except FileNotFoundError:  # a folder made or removed while listed
                paths = []
            for path in paths:
                meta = parse_rollout_path(path)
                if meta is not None:
                    seen[str(path)] = (meta["seq"], meta["policy_version"])
            time.sleep(0.001)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = _run(["parallel", *args], exp_dir)
    finally:
        stop.set()
        watcher.join(5)
    assert result["train_iter"] == 6
    assert result["policy_lag_max"] == 0 and result["policy_lag_mean"] == 0
    assert result["dropped_env_steps"] == 0
    ledger = result["ledger"]
    assert ledger["trained"] == 2 * 6, ledger
    assert ledger["dropped_stale"] == ledger["dropped_invalid"] == 0, ledger
    assert len(seen) >= 6, seen  # most files wait for the other collector's: seen
    for path, (seq, version) in seen.items():
        assert version == seq, f"{path}: rollout {seq} collected by policy v{version}"
    assert not any(data.glob("*/*.pt")), "rollout files left behind"
