"""The grid world's encoders and memory at one env-step budget: a random policy, the MLP
encoder and the CNN encoder (both under grid_ppo's LSTM), and the CNN without memory, in the
serial and the parallel pipeline.

For each seed and pipeline, trains ``grid_ppo`` (serial) or ``grid_ppo_parallel`` (1
learner, 2 collectors) in a fresh process to the experiment's ``max_env_step``, once per
policy of ``--policies``: ``cnn`` (the experiment as it is), ``mlp``
(``policy.model.encoder=mlp``: the same widths, core, segments and budget) and ``nomem``
(``policy.model.core=none``: the CNN alone, no LSTM), then evaluates the run's newest
checkpoint with
``ding-lite eval`` (deterministic actions, ``--episodes`` eval copies of 4 agents each,
eval seed ``1000 + seed``). The random policy plays the same eval env (same copies, same
seed) with uniform actions. The figure is the mean episode return per agent. Per run it
prints the figure and the wall seconds; then, per pipeline, min / median / max over the
seeds, and the median ratios CNN / random, CNN / MLP and CNN / no memory. Nothing is
asserted. ``--jobs 2`` runs two trainings at once (one per core with one torch thread each:
the figures are the same, the wall seconds are not a speed measurement then).

Every finished run is appended as one JSON line to ``--results`` (default
``bench/grid_encoders_results.jsonl``), so the runs can be done in parts; runs already there
are skipped unless ``--again``.

    OMP_NUM_THREADS=1 python bench/grid_encoders.py --seeds 2-4 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from pendulum_seeds import parse_seeds
from results import ResultsFile

EXPERIMENTS = {"serial": "grid_ppo", "parallel": "grid_ppo_parallel"}
#: Each policy's overrides on top of the experiment.
POLICIES = {
    "cnn": ["policy.model.encoder=cnn"],
    "mlp": ["policy.model.encoder=mlp"],
    "nomem": ["policy.model.encoder=cnn", "policy.model.core=none"],
}
EVAL_SEED = 1000  # eval seeds 1000 + seed: never a training seed
_RETURN = re.compile(r"return (-?[0-9.]+) \+- ")


def random_return(seed: int, episodes: int) -> float:
    """Mean return per agent of uniform actions over the first episode of ``episodes``
    copies of grid_ppo's env, seeded as the evaluations are."""
    import torch

    from ding_lite.config.config import compile_config
    from ding_lite.envs.from_config import build_env

    cfg = compile_config(EXPERIMENTS["serial"])
    env = build_env(cfg, episodes, "cpu", EVAL_SEED + seed, evaluation=True)
    env.reset()
    gen = torch.Generator().manual_seed(EVAL_SEED + seed)
    shape = (env.num_envs, env.num_agents)
    while True:
        *_, info = env.step(torch.randint(0, env.action_space.n, shape, generator=gen))
        if bool(info["episode"]["mask"].all()):  # all copies end their first episode together
            return float(info["episode"]["return"].mean())


def train_and_eval(
    pipeline: str, encoder: str, seed: int, root: Path, episodes: int, extra: list[str]
) -> dict:
    """One training run and the evaluation of its newest checkpoint, in fresh processes."""
    key = {"pipeline": pipeline, "encoder": encoder, "seed": seed}
    run_dir = root / f"{pipeline}_{encoder}_seed{seed}"
    cmd = [sys.executable, "-m", "ding_lite", pipeline, "-c", EXPERIMENTS[pipeline]]
    cmd += ["--seed", str(seed), "--exp-dir", str(run_dir), "-q", *extra, *POLICIES[encoder]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0 or not (run_dir / "result.json").is_file():
        return {**key, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    result = json.loads((run_dir / "result.json").read_text())
    cmd = [sys.executable, "-m", "ding_lite", "eval", str(run_dir), "--ckpt"]
    cmd += [str(run_dir / "ckpt"), "--episodes", str(episodes), "--seed", str(EVAL_SEED + seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    found = _RETURN.search(proc.stdout)
    if proc.returncode != 0 or found is None:
        return {**key, "error": (proc.stderr.strip().splitlines() or ["no eval output"])[-1]}
    return {
        **key,
        "return": float(found.group(1)),
        "envstep": result["envstep"],
        "wall_s": round(result["wall_s"], 1),
    }


def show(r: dict) -> None:
    name = f"{r['pipeline']:<9} {r['encoder']:<7} {r['seed']:>4}"
    if "error" in r:
        print(f"{name}  failed: {r['error']}", flush=True)
        return
    steps = f"{r['envstep']:>9,}" if "envstep" in r else f"{'-':>9}"
    wall = f"{r['wall_s']:>7.1f}" if "wall_s" in r else f"{'-':>7}"
    print(f"{name}  {r['return']:>8.3f}  {steps}  {wall}", flush=True)


def summarize(results: list[dict], pipelines: list[str], seeds: list[int]) -> None:
    def figures(pipeline: str, encoder: str) -> list[float]:
        return [
            r["return"]
            for r in results
            if r["encoder"] == encoder
            and r["seed"] in seeds
            and "return" in r
            and r["pipeline"] in (pipeline, "any")
        ]

    print(f"\nmean episode return per agent, seeds {','.join(map(str, seeds))}: min / median / max")
    for pipeline in pipelines:
        medians = {}
        for encoder in ("random", *POLICIES):
            values = figures(pipeline, encoder)
            if not values:
                continue
            medians[encoder] = statistics.median(values)
            print(
                f"  {pipeline:<9} {encoder:<7} {min(values):.3f} / {medians[encoder]:.3f} / "
                f"{max(values):.3f}  ({len(values)} seeds)"
            )
        if "cnn" in medians:
            ratios = [
                f"cnn / {other} {medians['cnn'] / medians[other]:.2f}x"
                for other in ("random", "mlp", "nomem")
                if medians.get(other, 0) > 0
            ]
            print(f"  {pipeline:<9} median {', '.join(ratios)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="2-4", help="e.g. 2-4 or 0,3,5")
    parser.add_argument("--pipelines", default="serial,parallel", help="serial, parallel")
    parser.add_argument("--policies", default="cnn,mlp,nomem", help=", ".join(POLICIES))
    parser.add_argument("--jobs", type=int, default=1, help="trainings run at once")
    parser.add_argument("--episodes", type=int, default=128, help="eval copies (x 4 agents)")
    parser.add_argument(
        "--results", default=str(Path(__file__).with_name("grid_encoders_results.jsonl"))
    )
    parser.add_argument("--again", action="store_true", help="rerun runs already recorded")
    parser.add_argument("overrides", nargs="*", help="config overrides, key=value")
    args = parser.parse_args()
    import torch

    threads = os.environ.get("OMP_NUM_THREADS") or str(torch.get_num_threads())
    print(f"torch {torch.__version__}, {threads} thread(s) per process")
    seeds = parse_seeds(args.seeds)
    pipelines = [p.strip() for p in args.pipelines.split(",")]
    encoders = [e.strip() for e in args.policies.split(",")]
    unknown = sorted(set(encoders) - set(POLICIES))
    if unknown:
        parser.error(f"unknown policies {', '.join(unknown)} (known: {', '.join(POLICIES)})")
    results = ResultsFile(args.results, lambda r: (r["pipeline"], r["encoder"], r["seed"]), show)
    done = results.done
    print(
        f"{'pipeline':<9} {'policy':<7} {'seed':>4}  {'return':>8}  {'env steps':>9}  {'wall s':>7}"
    )
    for seed in seeds:
        if ("any", "random", seed) not in done or args.again:
            ret = random_return(seed, args.episodes)
            results.record({"pipeline": "any", "encoder": "random", "seed": seed, "return": ret})
    todo = [
        (pipeline, encoder, seed)
        for seed in seeds
        for pipeline in pipelines
        for encoder in encoders
        if (pipeline, encoder, seed) not in done or args.again
    ]
    with (
        tempfile.TemporaryDirectory(prefix="ding_lite_grid_") as tmp,
        ThreadPoolExecutor(max(1, args.jobs)) as pool,
    ):
        runs = [
            pool.submit(train_and_eval, *run, Path(tmp), args.episodes, args.overrides)
            for run in todo
        ]
        for run in as_completed(runs):  # recorded as each ends: a stopped bench keeps them
            results.record(run.result())
    summarize(results.recorded, pipelines, seeds)


if __name__ == "__main__":
    main()
