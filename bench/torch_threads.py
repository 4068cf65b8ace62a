"""Serial runs alone and side by side, with ``system.torch_threads`` "auto" (one thread) and
with torch's own default (a thread per core), to choose and check the default.

Each case starts ``--side`` copies of the same command at once (``ding-lite serial -c EXP
--max-train-iter N``, no evaluation during training, fresh processes, ``OMP_NUM_THREADS``
unset) and reads each run's seconds from its result.json (``wall_s``: the run from its
config to its last iteration, without the process's imports). A case is repeated
``--repeat`` times; the script prints min / median / max seconds of a run. Nothing is
asserted. The figures in docs/benchmarks.rst ("Torch threads") come from:

    python bench/torch_threads.py --experiments cartpole_ppo:100 pendulum_ppo:20 \\
        aircombat_ppo:8 zoo_halfcheetah:3 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QUIET = [
    "evaluator.eval_freq=0",
    "evaluator.n_episodes=2",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
]


def _runs(experiment: str, iters: int, threads: str, side: int, folder: Path) -> list[float]:
    """Starts ``side`` runs at once; returns each one's training seconds."""
    exe = shutil.which("ding-lite")
    base = [exe] if exe else [sys.executable, "-m", "ding_lite"]
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    dirs = [folder / f"{experiment}-{threads}-{i}" for i in range(side)]
    procs = [
        subprocess.Popen(
            [*base, "serial", "-c", experiment, "--max-train-iter", str(iters)]
            + ["--exp-dir", str(d), f"system.torch_threads={threads}", *QUIET],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        for d in dirs
    ]
    for proc in procs:
        if proc.wait(timeout=3600) != 0:
            raise SystemExit(f"{experiment} with {threads} threads failed (exit {proc.returncode})")
    seconds = [json.loads((d / "result.json").read_text())["wall_s"] for d in dirs]
    for d in dirs:
        shutil.rmtree(d)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--experiments",
        nargs="+",
        default=["cartpole_ppo:150", "pendulum_ppo:50"],
        help="EXPERIMENT:ITERATIONS each",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--side", type=int, nargs="+", default=[1, 2], help="runs at once")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    settings = {"auto (1)": "auto", f"torch default ({cores})": str(cores)}
    print(f"{cores} cores; training seconds of one run: min / median / max of {args.repeat}")
    head = f"{'experiment':<22} {'runs at once':>12}  {'threads':<18}"
    print(f"{head} {'min':>7} {'median':>7} {'max':>7}")
    with tempfile.TemporaryDirectory(prefix="threads") as tmp:
        for spec in args.experiments:
            experiment, iters = spec.split(":")
            for side in args.side:
                for label, threads in settings.items():
                    times = []
                    for _ in range(args.repeat):
                        times += _runs(experiment, int(iters), threads, side, Path(tmp))
                    print(
                        f"{experiment:<22} {side:>12}  {label:<18} {min(times):>7.1f} "
                        f"{statistics.median(times):>7.1f} {max(times):>7.1f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
