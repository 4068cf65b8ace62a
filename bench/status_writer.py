"""What keeping ``status.json`` costs a run: the writer thread's own time over wall time.

Runs real trainings as a user would (``ding-lite serial`` / ``ding-lite parallel`` in a
subprocess, into a temp dir) and reads, from each run's final ``status.json``, the
writer's own timer: ``writer.seconds`` (the writer thread's CPU time: snapshots, JSON and
writes) and ``writer.wall_seconds`` (the same calls timed by the clock, which also counts
waiting for the interpreter lock while the training thread holds it), against the run's
``elapsed_s``. Printed per task: min / median / max of both shares over ``--runs`` runs,
and the number of writes per second. Nothing is asserted; the issue's bar is a share
under 1% (judged at the median).

    python bench/status_writer.py                       # 3 runs of each task
    python bench/status_writer.py --runs 5 --tasks cartpole_ppo_parallel
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# task -> (pipeline, experiment, extra arguments): each run takes some tens of seconds.
TASKS = {
    "cartpole_ppo": ("serial", "cartpole_ppo", ["--max-env-step", "150000"]),
    "pendulum_ppo": ("serial", "pendulum_ppo", ["--max-env-step", "100000"]),
    "cartpole_ppo_parallel": (
        "parallel",
        "cartpole_ppo_parallel",
        ["--max-env-step", "300000", "evaluator.stop_value=100000"],
    ),
}


def one_run(task: str, seed: int, root: Path) -> dict[str, float]:
    pipeline, experiment, extra = TASKS[task]
    run_dir = root / f"{task}_s{seed}"
    cmd = [sys.executable, "-m", "ding_lite", pipeline, "-c", experiment, "--seed", str(seed)]
    done = subprocess.run(
        [*cmd, "--exp-dir", str(run_dir), *extra], capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        raise SystemExit(f"{task} seed {seed} failed:\n{done.stdout[-2000:]}{done.stderr}")
    status = json.loads((run_dir / "status.json").read_text())
    elapsed, writer = float(status["elapsed_s"]), status["writer"]
    return {
        "cpu_share": writer["seconds"] / elapsed,
        "wall_share": writer["wall_seconds"] / elapsed,
        "writes_per_s": writer["writes"] / elapsed,
        "elapsed_s": elapsed,
    }


def spread(values: list[float], scale: float = 100.0, unit: str = "%") -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low * scale:.3f} / {mid * scale:.3f} / {high * scale:.3f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per task (default 3)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float]]] = {task: [] for task in args.tasks}
    with tempfile.TemporaryDirectory(prefix="status_writer_") as tmp:
        for seed in range(args.runs):  # tasks take turns, so all see the same machine load
            for task in args.tasks:
                rows[task].append(one_run(task, seed, Path(tmp)))
                r = rows[task][-1]
                print(
                    f"{task} seed {seed}: {r['elapsed_s']:.1f} s, writer CPU "
                    f"{r['cpu_share']:.3%}, clock {r['wall_share']:.3%}",
                    flush=True,
                )
    print(
        "\ntask                    writer CPU share (min / median / max)   "
        "clock share (min / median / max)   writes/s (median)"
    )
    for task, runs in rows.items():
        print(
            f"{task:<23} {spread([r['cpu_share'] for r in runs]):<39} "
            f"{spread([r['wall_share'] for r in runs]):<34} "
            f"{statistics.median(r['writes_per_s'] for r in runs):.2f}"
        )


if __name__ == "__main__":
    main()
