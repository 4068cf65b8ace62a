"""Serial vs parallel on Pendulum, in one run on the same machine.

For each seed: ``ding-lite serial -c pendulum_ppo`` and ``ding-lite parallel -c
pendulum_ppo_parallel`` with 1 and 2 collectors, all with the same algorithm settings (the
serial experiment's ``env.num_envs`` copies in total per iteration: all of them for serial,
1/C of them per collector). Each run is launched as
the command a user types, in a fresh process, so every run pays its own start-up (Python,
torch, and for parallel the worker processes). Prints, per run: wall seconds from launch to
exit (the run stops at the target, eval mean >= -200, or at the env-step limit; "in-run" is
the run's own ``wall_s`` from result.json, which leaves out the start of the main process),
steady-state env steps/s, and for the parallel runs the control round trip of a coordinator
task (``collector_data_task``) and the policy-sync latency (learner publishes -> a collector
acts with it), p50/p99. Asserts nothing about time. ``bench/policy_lag.py`` shows where the
parallel runs' lead to the target comes from (fewer iterations, from policy lag).

    python bench/parallel_throughput.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def total_envs() -> int:
    """The serial experiment's env copies per iteration, which the parallel runs split."""
    from ding_lite.config.experiments.pendulum_ppo import config

    return int(config["env"]["num_envs"])


def launch(args: list[str], exp_dir: Path) -> dict:
    """Runs ``python -m ding_lite ARGS --exp-dir EXP_DIR -q``; returns its result.json plus
    ``launch_to_end_s``, the wall seconds from launch to exit."""
    cmd = [sys.executable, "-m", "ding_lite", *args, "--exp-dir", str(exp_dir), "-q"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    result = json.loads((exp_dir / "result.json").read_text())
    result["launch_to_end_s"] = elapsed
    return result


def run_serial(seed: int, exp_dir: Path) -> dict:
    result = launch(["serial", "-c", "pendulum_ppo", "--seed", str(seed)], exp_dir)
    result["steady_sps"] = result["sps"]
    return result


def run_parallel(seed: int, collectors: int, exp_dir: Path) -> dict:
    args = ["parallel", "-c", "pendulum_ppo_parallel", "--seed", str(seed)]
    args += ["--collectors", str(collectors), f"env.num_envs={total_envs() // collectors}"]
    return launch(args, exp_dir)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    rows: dict[str, list[dict]] = {"serial": [], "parallel-1c": [], "parallel-2c": []}
    header = (
        f"{'run':<12} {'seed':>4} {'solved':>6} {'wall s':>7} {'in-run':>7} {'steps':>9} "
        f"{'iters':>5} {'steady SPS':>10} {'ctl p50/p99 ms':>15} {'sync p50/p99 ms':>16}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for name in rows:
                exp_dir = Path(tmp) / f"{name}_{seed}"
                if name == "serial":
                    r = run_serial(seed, exp_dir)
                else:
                    r = run_parallel(seed, int(name[-2]), exp_dir)
                rows[name].append(r)
                control = f"{_ms(r.get('control_p50_s'))}/{_ms(r.get('control_p99_s'))}"
                sync = f"{_ms(r.get('policy_sync_p50_s'))}/{_ms(r.get('policy_sync_p99_s'))}"
                print(
                    f"{name:<12} {seed:>4} {str(r['solved']):>6} {r['launch_to_end_s']:>7.1f} "
                    f"{r['wall_s']:>7.1f} {r['envstep']:>9} {r['train_iter']:>5} "
                    f"{r['steady_sps']:>10,.0f} "
                    f"{control:>15} {sync:>16}",
                    flush=True,
                )
    print()
    serial_wall = statistics.median(r["launch_to_end_s"] for r in rows["serial"])
    serial_in_run = statistics.median(r["wall_s"] for r in rows["serial"])
    for name, results in rows.items():
        wall = statistics.median(r["launch_to_end_s"] for r in results)
        in_run = statistics.median(r["wall_s"] for r in results)
        sps = statistics.median(r["steady_sps"] for r in results)
        solved = sum(r["solved"] for r in results)
        line = f"{name:<12} solved {solved}/{len(results)}  median wall {wall:6.1f} s  "
        line += f"median steady SPS {sps:,.0f}  serial/this wall = {serial_wall / wall:.2f}x"
        line += f" (in-run {serial_in_run / in_run:.2f}x)"
        if name != "serial":
            ctl = [r["control_p99_s"] for r in results if r["control_p99_s"] is not None]
            sync = [r["policy_sync_p99_s"] for r in results if r["policy_sync_p99_s"] is not None]
            line += f"  worst control p99 {_ms(max(ctl) if ctl else None)} ms"
            line += f"  worst sync p99 {_ms(max(sync) if sync else None)} ms"
        print(line)


if __name__ == "__main__":
    main()
