"""The zoo table: every ``zoo_<task>`` experiment on seeds 0-2 against rl-zoo's PPO figures.

For each experiment and seed asked for, runs ``ding-lite serial -c zoo_<task> --seed S`` in
a fresh process, as a user would: it trains its whole budget and ends with one evaluation
of 20 deterministic episodes, which ``result.json`` holds. With ``--sb3``, also trains
Stable-Baselines3's PPO with rl-zoo's settings for the task (its hyperparameters,
VecNormalize where rl-zoo normalizes, gSDE where rl-zoo uses it) on the same task version
and budget, and evaluates it the same way (20 deterministic episodes, normalization
frozen): the peer for rows whose task version differs from rl-zoo's.

Every finished run is appended as one JSON line to ``--results`` (default
``bench/zoo_results.jsonl``), so hours of runs can be done in parts and on several
machines; a run already in the file is skipped unless ``--again``. Each ding_lite row
carries a hash of its experiment's bundled settings: once an experiment is retuned, its
earlier rows leave the table and its seeds run again. Config overrides after
the options make a tuning variant: its rows carry the overrides and never enter the table.
At the end it prints the table of the file's rows for seeds 0-2 (task and version, budget,
ding_lite median [min, max], rl-zoo's figure and version, the ratio, SB3's median where
measured, wall seconds) and, with ``--write-docs``, puts it into docs/benchmarks.rst.
Nothing is asserted.

    python bench/zoo.py                                   # every zoo experiment, seeds 0-2
    python bench/zoo.py --experiments zoo_halfcheetah --seeds 10-12 policy.learn.n_epochs=10
    python bench/zoo.py --experiments zoo_pendulum --sb3  # SB3 with rl-zoo's settings too
    python bench/zoo.py --report --write-docs             # the file's table into the docs
    OMP_NUM_THREADS=1 python bench/zoo.py --jobs 2        # two one-thread runs at a time

The ratio is ding_lite's median over rl-zoo's figure; for a task whose returns are costs
(negative), rl-zoo's over ding_lite's: above 1 is better either way.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_HERE = Path(__file__).resolve().parent
TABLE_SEEDS = (0, 1, 2)
DOCS = _HERE.parent / "docs" / "benchmarks.rst"
BEGIN, END = ".. begin zoo table", ".. end zoo table"


def parse_seeds(text: str) -> list[int]:
    """``"0-2"`` or ``"0,3,5"`` -> a list of seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return seeds


def zoo_names() -> list[str]:
    from ding_lite.config.config import EXPERIMENTS

    return [name for name in EXPERIMENTS if name.startswith("zoo_")]


@functools.cache
def settings_id(name: str) -> str:
    """A short hash of the experiment's settings as bundled: the rows of an earlier version of
    an experiment (retuned since) carry another id and leave the table."""
    from ding_lite.config.config import load_experiment

    text = json.dumps(load_experiment(name), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def is_current(row: dict) -> bool:
    """A finished run of the settings bundled now (SB3's rows have no ding_lite settings)."""
    if "error" in row:
        return False
    return row["trainer"] != "ding_lite" or row.get("settings") == settings_id(row["experiment"])


def run_ding_lite(name: str, seed: int, overrides: list[str], timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="ding_lite_zoo_") as tmp:
        run = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", name, "-q"]
        cmd += ["--seed", str(seed), "--exp-dir", str(run), *overrides]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish within {timeout:.0f} s"}
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        result = json.loads((run / "result.json").read_text())
    return {
        "eval_return": result["eval_return_mean"],
        "eval_std": result["eval_return_std"],
        "eval_episodes": result["eval_episodes"],
        "envstep": result["envstep"],
        "wall_s": round(wall, 1),
    }


def run_sb3_process(name: str, seed: int, timeout: float) -> dict:
    """One SB3 run in a fresh process (so that ``--jobs`` runs them side by side)."""
    cmd = [sys.executable, str(_HERE / "sb3_zoo.py"), name, str(seed)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def provenance() -> dict:
    """What makes a figure reproducible: torch build, threads, commit, machine."""
    import torch

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", "-C", str(_HERE), *args], capture_output=True, text=True
            ).stdout.strip()
        except OSError:  # no git on this machine
            return ""

    from ding_lite.utils.device import cpu_model

    dirty = git("status", "--porcelain", "--", "../ding_lite")
    return {
        "torch": torch.__version__,
        "threads": int(os.environ.get("OMP_NUM_THREADS") or torch.get_num_threads()),
        "commit": git("rev-parse", "--short", "HEAD") + ("+changes" if dirty else ""),
        "machine": f"{os.cpu_count()} x {cpu_model()}",
    }


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def better_ratio(ours: float, ref: float) -> float:
    """ours / ref, or ref / ours for costs (both negative): above 1 is better either way."""
    if ref < 0:
        return float("inf") if ours >= 0 else ref / ours
    return ours / ref


def table(rows: list[dict]) -> list[str]:
    """The zoo table of the runs on seeds 0-2 without overrides, of the settings bundled now
    (ding_lite's rows of an earlier version of an experiment are left out)."""
    from ding_lite.config.zoo import zoo_row

    def figures(trainer: str, name: str) -> list[dict]:
        return [
            r
            for r in rows
            if r["trainer"] == trainer
            and r["experiment"] == name
            and r["seed"] in TABLE_SEEDS
            and not r.get("overrides")
            and is_current(r)
        ]

    head = (
        f"{'task':<26} {'budget':>9}  {'ding_lite median [min, max]':<30} "
        f"{'rl-zoo (version)':<34} {'ratio':>5}  {'SB3 rl-zoo settings':<22} {'wall s':>6}"
    )
    lines = [head, "-" * len(head)]
    for name in zoo_names():
        row = zoo_row(name)
        ours = figures("ding_lite", name)
        if not ours:
            lines.append(f"{row.task:<26} {row.budget:>9,}  (not measured)")
            continue
        returns = sorted(r["eval_return"] for r in ours)
        median = statistics.median(returns)
        spread = f"{median:.1f} [{returns[0]:.1f}, {returns[-1]:.1f}]"
        if len(ours) < len(TABLE_SEEDS):
            spread += f" ({len(ours)} seeds)"
        sb3 = figures("sb3", name)
        sb3_text = "-"
        if sb3:
            sb3_median = statistics.median(r["eval_return"] for r in sb3)
            sb3_text = f"{sb3_median:.1f} ({better_ratio(median, sb3_median):.2f}x)"
        wall = statistics.median(r["wall_s"] for r in ours)
        zoo_text = f"{row.rl_zoo:g} ({row.rl_zoo_task})"
        lines.append(
            f"{row.task:<26} {row.budget:>9,}  {spread:<30} {zoo_text:<34} "
            f"{better_ratio(median, row.rl_zoo):>5.2f}  {sb3_text:<22} {wall:>6.0f}"
        )
    return lines


def write_docs(lines: list[str]) -> None:
    text = DOCS.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOCS} has no '{BEGIN}' ... '{END}' region")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    block = "\n".join(["", "::", "", *("    " + line for line in lines), "", ""])
    DOCS.write_text(before + BEGIN + "\n" + block + END + after, encoding="utf-8")
    print(f"wrote the table into {DOCS}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiments", default="", help="e.g. zoo_pendulum,zoo_ant (all)")
    parser.add_argument("--seeds", default="0-2", help="e.g. 0-2 or 0,2")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    parser.add_argument("--sb3", action="store_true", help="also SB3 with rl-zoo's settings")
    parser.add_argument("--no-ding", action="store_true", help="only the SB3 runs")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per run")
    parser.add_argument("--results", default=str(_HERE / "zoo_results.jsonl"))
    parser.add_argument("--again", action="store_true", help="re-run runs already in the file")
    parser.add_argument("--write-docs", action="store_true", help="the table into the docs")
    parser.add_argument("--report", action="store_true", help="only the table; runs nothing")
    parser.add_argument("overrides", nargs="*", help="config overrides (a tuning variant)")
    args = parser.parse_args()
    names = [n for n in args.experiments.split(",") if n] or zoo_names()
    unknown = sorted(set(names) - set(zoo_names()))
    if unknown:
        parser.error(f"not zoo experiments: {', '.join(unknown)}; zoo: {', '.join(zoo_names())}")
    not_overrides = [o for o in args.overrides if "=" not in o]
    if not_overrides:
        parser.error(
            f"{not_overrides[0]!r} is not a config override (key.sub=value); "
            "name several experiments with commas: --experiments zoo_ant,zoo_swimmer"
        )
    path = Path(args.results)
    key = tuple(args.overrides)
    done = {
        (r["trainer"], r["experiment"], r["seed"], tuple(r.get("overrides", ())))
        for r in load(path)
        if is_current(r)
    }
    plan = (
        []
        if args.no_ding
        else [("ding_lite", n, s) for n in names for s in parse_seeds(args.seeds)]
    )
    if args.sb3:
        plan += [("sb3", n, s) for n in names for s in parse_seeds(args.seeds)]
    if args.report:
        plan = []
    plan = [p for p in plan if args.again or (*p, key if p[0] == "ding_lite" else ()) not in done]
    meta = provenance()

    def one(trainer: str, name: str, seed: int) -> dict:
        if trainer == "sb3":
            figures = run_sb3_process(name, seed, args.timeout)
        else:
            figures = run_ding_lite(name, seed, args.overrides, args.timeout)
        row = {"trainer": trainer, "experiment": name, "seed": seed, **figures}
        if trainer == "ding_lite":
            row["settings"] = settings_id(name)
            if args.overrides:
                row["overrides"] = list(args.overrides)
        row.update(date=time.strftime("%Y-%m-%d"), **meta)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        shown = row.get("error") or f"eval return {row['eval_return']:.1f} in {row['wall_s']:.0f} s"
        print(f"{trainer} {name} seed {seed}: {shown}", flush=True)
        return row

    print(f"{len(plan)} run(s), {args.jobs} at a time; results in {path}", flush=True)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for job in [pool.submit(one, *p) for p in plan]:
            job.result()
    lines = table(load(path))
    print("\n" + "\n".join(lines))
    if args.write_docs:
        write_docs(lines)


if __name__ == "__main__":
    main()
