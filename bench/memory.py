"""Memory pays where the state is hidden: the LSTM experiments beside the same settings
without the core, per seed.

For each task asked for, runs ``ding-lite serial -c <task>_lstm_ppo --seed S`` in a fresh
process, and the same experiment with ``policy.model.core=none`` (a feed-forward policy of
the same widths, on the same position-only observations, with the same segments and
budget). Both see ``env.kwargs.observe=position``: cartpole without its two velocities,
pendulum without its angular velocity. Per run it prints whether an evaluation reached the
experiment's target, at how many env steps, the last and the best evaluation, and the wall
seconds; then per task and policy the median best evaluation and the median env steps of
the runs that solved. ``--parallel`` also trains ``cartpole_lstm_ppo`` in the parallel
pipeline (1 learner, 2 collectors). Nothing is asserted.

Every finished run is appended as one JSON line to ``--results`` (default
``bench/memory_results.jsonl``), so the runs can be done in parts; runs already there are
skipped unless ``--again``.

    python bench/memory.py --tasks cartpole,pendulum --seeds 0-2
    python bench/memory.py --tasks cartpole --seeds 0-2 --parallel --no-mlp
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pendulum_seeds import parse_seeds

TASKS = {"cartpole": "cartpole_lstm_ppo", "pendulum": "pendulum_lstm_ppo"}


def run(
    experiment: str, seed: int, policy: str, pipeline: str, root: Path, extra: list[str]
) -> dict:
    """One run in a fresh process; its ``result.json`` with what identifies it."""
    run_dir = root / f"{experiment}_{policy}_{pipeline}_seed{seed}"
    cmd = [sys.executable, "-m", "ding_lite", pipeline, "-c", experiment, "--seed", str(seed)]
    cmd += ["--exp-dir", str(run_dir), "-q", *extra]
    if policy == "mlp":
        cmd.append("policy.model.core=none")
    if pipeline == "parallel":
        cmd.append("system.collectors=2")
    key = {"experiment": experiment, "seed": seed, "policy": policy, "pipeline": pipeline}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=4 * 3600)
    if proc.returncode != 0 and not (run_dir / "result.json").is_file():
        return {**key, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    result = json.loads((run_dir / "result.json").read_text())
    return {**key, **{k: result.get(k) for k in FIELDS}}


FIELDS = (
    "solved",
    "envstep",
    "eval_return_mean",
    "best_eval_return",
    "stop_value",
    "wall_s",
    "stop_reason",
)


def show(r: dict) -> None:
    name = f"{r['experiment']} {r['policy']} {r['pipeline']}"
    if "error" in r:
        print(f"{name:<38} {r['seed']:>4}  failed: {r['error']}", flush=True)
        return
    print(
        f"{name:<38} {r['seed']:>4}  {str(r['solved']):>6}  {r['envstep']:>9,}  "
        f"{r['eval_return_mean']:>9.1f}  {r['best_eval_return']:>9.1f}  {r['wall_s']:>7.1f}",
        flush=True,
    )


def summarize(results: list[dict]) -> None:
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if "error" not in r:
            groups.setdefault((r["experiment"], r["policy"], r["pipeline"]), []).append(r)
    print("\nmedian over seeds (best evaluation; env steps and wall s of the solved runs):")
    for (experiment, policy, pipeline), runs in sorted(groups.items()):
        solved = [r for r in runs if r["solved"]]
        steps = f"{statistics.median(r['envstep'] for r in solved):,.0f}" if solved else "-"
        wall = f"{statistics.median(r['wall_s'] for r in solved):.0f}" if solved else "-"
        best = statistics.median(r["best_eval_return"] for r in runs)
        seeds = ",".join(str(r["seed"]) for r in sorted(runs, key=lambda r: r["seed"]))
        print(
            f"  {experiment} {policy} {pipeline}: seeds {seeds}: solved {len(solved)} of "
            f"{len(runs)}; best eval {best:.1f}; env steps {steps}; wall s {wall}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="cartpole,pendulum", help="cartpole, pendulum")
    parser.add_argument("--seeds", default="0-2", help="e.g. 0-2 or 0,3,5")
    parser.add_argument("--no-mlp", action="store_true", help="skip the core=none runs")
    parser.add_argument("--no-serial", action="store_true", help="skip the serial LSTM runs")
    parser.add_argument(
        "--parallel", action="store_true", help="cartpole_lstm_ppo in the parallel pipeline"
    )
    parser.add_argument("--results", default=str(Path(__file__).with_name("memory_results.jsonl")))
    parser.add_argument("--again", action="store_true", help="rerun runs already recorded")
    parser.add_argument("overrides", nargs="*", help="config overrides, key=value")
    args = parser.parse_args()
    import torch

    threads = os.environ.get("OMP_NUM_THREADS") or str(torch.get_num_threads())
    print(f"torch {torch.__version__}, {threads} thread(s) per run")
    plan = []
    for task in args.tasks.split(","):
        experiment = TASKS[task.strip()]
        for seed in parse_seeds(args.seeds):
            if not args.no_serial:
                plan.append((experiment, seed, "lstm", "serial"))
            if not args.no_mlp:
                plan.append((experiment, seed, "mlp", "serial"))
            if args.parallel and task.strip() == "cartpole":
                plan.append((experiment, seed, "lstm", "parallel"))
    path = Path(args.results)
    recorded = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    done = {(r["experiment"], r["seed"], r["policy"], r["pipeline"]) for r in recorded}
    print(
        f"{'run':<38} {'seed':>4}  {'solved':>6}  {'env steps':>9}  {'last eval':>9}  "
        f"{'best eval':>9}  {'wall s':>7}"
    )
    with tempfile.TemporaryDirectory(prefix="ding_lite_memory_") as tmp:
        for item in plan:
            if item in done and not args.again:
                continue
            r = run(*item, Path(tmp), args.overrides)
            show(r)
            if "error" not in r:
                recorded = [
                    old
                    for old in recorded
                    if (old["experiment"], old["seed"], old["policy"], old["pipeline"]) != item
                ]
                recorded.append(r)
                path.write_text("".join(json.dumps(x) + "\n" for x in recorded))
    wanted = set(plan)
    summarize(
        [r for r in recorded if (r["experiment"], r["seed"], r["policy"], r["pipeline"]) in wanted]
    )


if __name__ == "__main__":
    main()
