"""Does ``pendulum_ppo`` solve for every seed? Env steps and wall seconds to -200, per seed.

Runs ``ding-lite serial -c pendulum_ppo --seed S`` as a user would (a fresh process per
seed, one at a time unless ``--jobs``), reads each run's ``result.json`` and prints, per
seed, whether an evaluation (20 deterministic episodes, every 8,192 env steps) reached
-200, at how many env steps, and the run's wall seconds; then how many seeds solved within
200,000 and 300,000 env steps, and the torch build and thread count (the same seed, build
and thread count give the same figures). Nothing is asserted.

    python bench/pendulum_seeds.py --seeds 0-9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def parse_seeds(text: str) -> list[int]:
    """``"0-9"`` or ``"0,3,5"`` -> a list of seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return seeds


def run_seed(seed: int, root: Path, max_env_step: int, extra: list[str]) -> dict:
    run = root / f"seed{seed}"
    cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "pendulum_ppo"]
    cmd += ["--seed", str(seed), "--exp-dir", str(run), "-q", f"max_env_step={max_env_step}"]
    proc = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return {"seed": seed, "error": proc.stderr.strip().splitlines()[-1:]}
    result = json.loads((run / "result.json").read_text())
    return {"seed": seed, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-9", help="e.g. 0-9 or 0,3,5")
    parser.add_argument("--max-env-step", type=int, default=300_000)
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (wall s suffer)")
    parser.add_argument("overrides", nargs="*", help="config overrides, key=value")
    args = parser.parse_args()
    import torch

    threads = os.environ.get("OMP_NUM_THREADS") or str(torch.get_num_threads())
    print(f"torch {torch.__version__}, {threads} thread(s) per run, {args.jobs} run(s) at a time")
    print(f"{'seed':>4}  {'solved':>6}  {'env steps':>9}  {'eval return':>11}  {'wall s':>6}")
    with tempfile.TemporaryDirectory(prefix="ding_lite_pendulum_") as tmp:
        seeds = parse_seeds(args.seeds)
        with ThreadPoolExecutor(args.jobs) as pool:
            jobs = [
                pool.submit(run_seed, s, Path(tmp), args.max_env_step, args.overrides)
                for s in seeds
            ]
            results = []
            for job in jobs:
                r = job.result()
                results.append(r)
                if "error" in r:
                    print(f"{r['seed']:>4}  failed: {' '.join(r['error'])}", flush=True)
                    continue
                print(
                    f"{r['seed']:>4}  {str(r['solved']):>6}  {r['envstep']:>9,}  "
                    f"{r['eval_return_mean']:>11.1f}  {r['wall_s']:>6.1f}",
                    flush=True,
                )
    done = [r for r in results if "error" not in r]
    solved = [r["envstep"] for r in done if r["solved"]]
    for limit in (200_000, 300_000):
        within = sum(1 for steps in solved if steps <= limit)
        print(f"solved within {limit:,} env steps: {within} of {len(seeds)}")
    if solved:
        print(
            f"env steps to -200: median {statistics.median(solved):,.0f}, max {max(solved):,}; "
            f"wall s median {statistics.median(r['wall_s'] for r in done):.1f}"
        )


if __name__ == "__main__":
    main()
