"""Scaling on CPU-bound work: serial, then parallel with C collectors and L learner ranks.

    python bench/scaling.py                                   # every C up to the cores, L = 1, 2
    python bench/scaling.py --collectors 1 2 4 8 --learners 1 --seconds 90
    python bench/scaling.py --launcher ray

The workload is ``mujoco_ppo`` on gymnasium's HalfCheetah-v5 (target: eval mean >= 1500)
when the ``mujoco`` extra is installed, else ``gym_ppo`` on CartPole-v1 (target 475), both
through the gymnasium adapter, whose env steps cost real CPU. Each run is the command a user
types, in a fresh process; it ends at the target or, after ``--seconds``, by SIGINT (which
writes result.json like any interrupted run). In the parallel runs every collector steps the
experiment's ``env.num_envs`` copies for ``n_steps`` per iteration, so the batch grows with
C, and ``policy.learn.batch_size`` grows with it so the number of minibatches stays fixed.

Printed per run: steady env steps/s (from the end of the first iteration to the last, read
from the run's tensorboard), seconds per update (median of the learner's ``perf/update_s``),
wall seconds to the target (``-``: not within the run), the control and policy-sync p99,
the coordinator's CPU share (its process's CPU seconds over the run's wall time), and the
speed-ups of steady env steps/s against serial and against C = 1 with the same L. Serial's
per-iteration collect and update medians give the overlap bound
``(collect + update) / max(collect, update)``: what running collection beside the update
can gain at most with one learner and one collector; a serial iteration also holds its
share of the evaluations, which a parallel run does on a collector beside the update, so
the line adds the ceiling ``(serial seconds per iteration) / max(collect, update)``.
Nothing is asserted; every run is appended to ``--out`` as one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from ding_lite.utils.log import read_tb_events

WORKLOADS = {
    "halfcheetah": ("mujoco_ppo", ["env.name=gym:HalfCheetah-v5"], 1500.0),
    "cartpole": ("gym_ppo", ["env.name=gym:CartPole-v1"], 475.0),
}


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def launch(args: list[str], exp_dir: Path, seconds: float) -> dict:
    """Runs ``python -m ding_lite ARGS``; SIGINT after ``seconds``. Returns result.json with
    ``launch_to_end_s`` and the figures read from the run's tensorboard."""
    cmd = [sys.executable, "-m", "ding_lite", *args, "--exp-dir", str(exp_dir), "-q"]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise SystemExit(f"{' '.join(cmd)} did not stop within 90 s of SIGINT") from None
    if proc.returncode not in (0, 130):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    result = json.loads((exp_dir / "result.json").read_text())
    result["launch_to_end_s"] = time.perf_counter() - start
    parallel = (exp_dir / "tb" / "coordinator").is_dir()
    main_tb = exp_dir / "tb" / "coordinator" if parallel else exp_dir / "tb"
    learner_tb = exp_dir / "tb" / "learner0" if parallel else exp_dir / "tb"
    main, learner = _events(main_tb), _events(learner_tb)
    result["steady"] = _steady(main.get("charts/SPS", []))
    result["update_s"] = _median(learner.get("perf/update_s", []))
    result["collect_s"] = _median(learner.get("perf/collect_s", []))
    return result


def _events(folder: Path) -> dict:
    files = sorted(folder.glob("events.out.tfevents.*")) if folder.is_dir() else []
    merged: dict = {}
    for path in files:
        for tag, points in read_tb_events(path).items():
            merged.setdefault(tag, []).extend(points)
    return merged


def _steady(points: list) -> float | None:
    """Env steps per second between the first and the last iteration's log."""
    if len(points) < 2:
        return None
    (step0, _, t0), (step1, _, t1) = (
        min(points, key=lambda p: p[2]),
        max(points, key=lambda p: p[2]),
    )
    return (step1 - step0) / (t1 - t0) if t1 > t0 else None


def _median(points: list) -> float | None:
    return statistics.median(p[1] for p in points) if points else None


def _fmt(value, spec: str, none: str = "-") -> str:
    return none if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_env = "halfcheetah" if importlib.util.find_spec("mujoco") else "cartpole"
    parser.add_argument("--env", choices=sorted(WORKLOADS), default=default_env)
    parser.add_argument("--seconds", type=float, default=120.0, help="cap of each run")
    steps = [c for c in (1, 2, 4, 8, 16, 32, 64) if c <= cores()]
    parser.add_argument("--collectors", type=int, nargs="+", default=steps)
    parser.add_argument("--learners", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--launcher", choices=("local", "ray"), default="local")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-serial", action="store_true", help="parallel runs only")
    parser.add_argument("--out", default=str(Path(__file__).with_name("scaling_results.jsonl")))
    parser.add_argument("overrides", nargs="*", help="config overrides for every run")
    args = parser.parse_args()

    exp, env_overrides, target = WORKLOADS[args.env]
    # Flags first: argparse takes the overrides (positional) as one run at the end.
    flags = ["-c", exp, "--seed", str(args.seed)]
    overrides = [*env_overrides, f"evaluator.stop_value={target}", "evaluator.eval_freq=10"]
    overrides += args.overrides
    from ding_lite.config import compile_config

    base = compile_config(exp, env_overrides + list(args.overrides))
    minibatch, num_envs = base.policy.learn.batch_size, base.env.num_envs
    print(
        f"{args.env} ({exp}), target {target:g}, {num_envs} env copies per collector, "
        f"{cores()} cores, torch {torch.__version__}, launcher {args.launcher}, "
        f"runs capped at {args.seconds:g} s",
        flush=True,
    )
    header = (
        f"{'run':<10} {'steady SPS':>10} {'x serial':>8} {'x C=1':>6} {'update s':>8} "
        f"{'to target s':>11} {'ctl p99 ms':>10} {'sync p99 ms':>11} {'coord CPU':>9}"
    )
    print(header, flush=True)
    rows: list[dict] = []
    serial_sps = None
    with tempfile.TemporaryDirectory() as tmp:
        plan = [] if args.no_serial else [("serial", 0, 0)]
        plan += [("parallel", c, n) for n in args.learners for c in args.collectors]
        c1_sps: dict[int, float] = {}
        for mode, collectors, learners in plan:
            name = "serial" if mode == "serial" else f"L{learners}C{collectors}"
            run_args = [mode, *flags]
            if mode == "parallel":
                run_args += ["--collectors", str(collectors), "--learners", str(learners)]
                run_args += ["--launcher", args.launcher, *overrides]
                run_args += [f"policy.learn.batch_size={minibatch * collectors}"]
            else:
                run_args += overrides
            r = launch(run_args, Path(tmp) / name, args.seconds)
            sps = r["steady"]
            if mode == "serial":
                serial_sps = sps
            elif collectors == 1:
                c1_sps[learners] = sps
            c1 = c1_sps.get(learners)
            wall = r["wall_s"] if r.get("solved") else None
            share = r["coordinator_cpu_s"] / r["wall_s"] if r.get("coordinator_cpu_s") else None
            ctl, sync = r.get("control_p99_s"), r.get("policy_sync_p99_s")
            print(
                f"{name:<10} {_fmt(sps, ',.0f'):>10} "
                f"{_fmt(sps / serial_sps if sps and serial_sps else None, '.2f'):>8} "
                f"{_fmt(sps / c1 if sps and c1 and mode == 'parallel' else None, '.2f'):>6} "
                f"{_fmt(r['update_s'], '.3f'):>8} {_fmt(wall, '.1f'):>11} "
                f"{_fmt(ctl * 1000 if ctl else None, '.1f'):>10} "
                f"{_fmt(sync * 1000 if sync else None, '.1f'):>11} "
                f"{_fmt(share, '.1%'):>9}",
                flush=True,
            )
            if mode == "serial" and r["collect_s"] and r["update_s"] and sps:
                collect, update = r["collect_s"], r["update_s"]
                # A whole serial iteration also holds its share of the evaluations, which
                # the parallel pipeline runs on a collector beside the update.
                iteration = base.policy.collect.n_steps * num_envs / sps
                print(
                    f"{'':<10} serial per iteration: collect {collect:.3f} s, update "
                    f"{update:.3f} s; overlap bound (collect + update) / max = "
                    f"{(collect + update) / max(collect, update):.2f}x; with the "
                    f"evaluations an iteration takes {iteration:.3f} s: "
                    f"{iteration / max(collect, update):.2f}x",
                    flush=True,
                )
            row = {
                "run": name,
                "env": args.env,
                "collectors": collectors,
                "learners": learners,
                "steady_sps": sps,
                "update_s": r["update_s"],
                "collect_s": r["collect_s"],
                "to_target_s": wall,
                "envstep": r["envstep"],
                "eval_return": r.get("eval_return_mean"),
                "control_p99_s": ctl,
                "policy_sync_p99_s": sync,
                "coordinator_cpu_share": share,
                "seconds": args.seconds,
                "launcher": args.launcher,
                "cores": cores(),
                "torch": torch.__version__,
                "machine": platform.processor() or platform.machine(),
                "date": time.strftime("%Y-%m-%d"),
            }
            rows.append(row)
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
