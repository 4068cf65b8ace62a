"""Where the parallel pipeline's lead on Pendulum comes from: iterations, and policy lag.

On 2 cores a parallel run steps about as many env steps per second as a serial one, yet it
reaches Pendulum's target (eval mean >= -200) sooner: it needs fewer iterations. A parallel
collector collects the next rollout while the learner trains on the last one, so the
learner's update at version v trains on data that policy v - 1 collected. This script
separates that effect from concurrency. Per seed, each in a fresh child process:

- ``serial``: ``ding-lite serial -c pendulum_ppo``;
- ``serial-lag1``: the same serial run, except that each rollout is collected by the policy
  as it was one update earlier, as in a parallel run (one process, no concurrency);
- ``parallel-1c``: ``ding-lite parallel -c pendulum_ppo_parallel --collectors 1`` with 64 env
  copies, the same data per iteration as serial.

It prints how many runs reached the target within the 2M env-step limit and the iterations
they took. Iteration counts do not depend on the machine's speed, so runs may share it
(``--jobs``); each child gets ``--threads`` torch threads (default 1) so that they do not
crowd each other. Wall seconds are not compared here: ``bench/parallel_throughput.py`` does
that, one run at a time. Asserts nothing.

    python bench/policy_lag.py --seeds 0 1 2 3 4 5 6 --jobs 2
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODES = ("serial", "serial-lag1", "parallel-1c")


def lagged_serial_run() -> type:
    """A ``SerialRun`` that collects every rollout with the policy one update behind.

    Set it as ``ding_lite.entry.serial.SerialRun`` before calling ``serial_pipeline``.
    """
    from ding_lite.entry import serial

    class LaggedSerialRun(serial.SerialRun):
        def __init__(self, cfg, run_dir, **kwargs):
            super().__init__(cfg, run_dir, **kwargs)
            behaviour = copy.deepcopy(self.policy)  # acts; never trains
            self.collector.policy = behaviour.collect_mode
            train = self.learner.train

            def train_then_hand_back(data, envstep):
                before = copy.deepcopy(self.policy.model.state_dict())
                info = train(data, envstep)
                behaviour.model.load_state_dict(before)  # the next rollout lags one update
                return info

            self.learner.train = train_then_hand_back

    return LaggedSerialRun


def run_one(mode: str, seed: int, exp_dir: Path) -> dict:
    """Runs one mode for one seed in this process (parallel: as the CLI command)."""
    if mode == "parallel-1c":
        # The sibling script's launcher: the CLI command, 64 env copies in all.
        from parallel_throughput import run_parallel

        result = run_parallel(seed, 1, exp_dir)
    else:
        from ding_lite.entry import serial

        if mode == "serial-lag1":
            serial.SerialRun = lagged_serial_run()
        result = serial.serial_pipeline("pendulum_ppo", seed=seed, exp_dir=str(exp_dir)).result
    return {k: result[k] for k in ("seed", "solved", "train_iter", "envstep")}


def _child(mode: str, seed: int, threads: int, tmp: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    exp_dir = Path(tmp) / f"{mode}_{seed}"
    cmd = [sys.executable, __file__, "--one", mode, str(seed), str(exp_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} seed {seed} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--one", nargs=3, metavar=("MODE", "SEED", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        mode, seed, exp_dir = args.one
        print(json.dumps(run_one(mode, int(seed), Path(exp_dir))))
        return
    jobs = [(mode, seed) for mode in args.modes for seed in args.seeds]
    print(f"{len(jobs)} runs, {args.jobs} at a time, {args.threads} torch thread(s) each")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = {job: pool.submit(_child, *job, args.threads, tmp) for job in jobs}
        results = {}
        for (mode, seed), future in futures.items():
            results[mode, seed] = r = future.result()
            mark = "" if r["solved"] else " (not solved)"
            print(f"  {mode:<12} seed {seed:>3}: {r['train_iter']:>4} iterations{mark}", flush=True)
    print(f"\n{'mode':<12} {'solved':<7} {'median iters':>12}  iterations by seed (+: not solved)")
    for mode in args.modes:
        rows = [results[mode, seed] for seed in args.seeds]
        solved = sum(r["solved"] for r in rows)
        median = statistics.median(r["train_iter"] for r in rows)
        by_seed = " ".join(
            f"{r['seed']}:{r['train_iter']}{'' if r['solved'] else '+'}" for r in rows
        )
        print(f"{mode:<12} {f'{solved}/{len(rows)}':<7} {median:>12g}  {by_seed}")


if __name__ == "__main__":
    main()
