"""Serial vs parallel on Pendulum, in one run on the same machine.

For each seed: ``ding-lite serial -c pendulum_ppo`` and ``ding-lite parallel -c
pendulum_ppo_parallel`` with 1 and 2 collectors, all with the same algorithm settings (64 env
copies in total per iteration: 64 for serial, 64 / C per collector). Prints, per run: wall
seconds from launch to the target (eval mean >= -200, or the env-step limit), steady-state env
steps/s, and for the parallel runs the control round trip of a coordinator task
(``collector_data_task``) and the policy-sync latency (learner publishes -> a collector acts
with it), p50/p99. Asserts nothing about time.

    python bench/parallel_throughput.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

TOTAL_ENVS = 64


def run_serial(seed: int, exp_dir: Path) -> dict:
    from ding_lite import serial_pipeline

    start = time.perf_counter()
    policy = serial_pipeline("pendulum_ppo", seed=seed, exp_dir=str(exp_dir))
    result = dict(policy.result)
    result["launch_to_end_s"] = time.perf_counter() - start
    result["steady_sps"] = result["sps"]
    return result


def run_parallel(seed: int, collectors: int, exp_dir: Path) -> dict:
    from ding_lite.entry.parallel import parallel_pipeline

    start = time.perf_counter()
    result = parallel_pipeline(
        "pendulum_ppo_parallel",
        seed=seed,
        collectors=collectors,
        exp_dir=str(exp_dir),
        overrides=[f"env.num_envs={TOTAL_ENVS // collectors}"],
    )
    result["launch_to_end_s"] = time.perf_counter() - start
    return result


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    rows: dict[str, list[dict]] = {"serial": [], "parallel-1c": [], "parallel-2c": []}
    header = (
        f"{'run':<12} {'seed':>4} {'solved':>6} {'wall s':>7} {'steps':>9} {'iters':>5} "
        f"{'steady SPS':>10} {'ctl p50/p99 ms':>15} {'sync p50/p99 ms':>16}"
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
                    f"{r['envstep']:>9} {r['train_iter']:>5} {r['steady_sps']:>10,.0f} "
                    f"{control:>15} {sync:>16}",
                    flush=True,
                )
    print()
    serial_wall = statistics.median(r["launch_to_end_s"] for r in rows["serial"])
    for name, results in rows.items():
        wall = statistics.median(r["launch_to_end_s"] for r in results)
        sps = statistics.median(r["steady_sps"] for r in results)
        solved = sum(r["solved"] for r in results)
        line = f"{name:<12} solved {solved}/{len(results)}  median wall {wall:6.1f} s  "
        line += f"median steady SPS {sps:,.0f}  serial/this wall = {serial_wall / wall:.2f}x"
        if name != "serial":
            ctl = [r["control_p99_s"] for r in results if r["control_p99_s"] is not None]
            sync = [r["policy_sync_p99_s"] for r in results if r["policy_sync_p99_s"] is not None]
            line += f"  worst control p99 {_ms(max(ctl) if ctl else None)} ms"
            line += f"  worst sync p99 {_ms(max(sync) if sync else None)} ms"
        print(line)


if __name__ == "__main__":
    main()
