"""The league's air-combat figures (docs/league.rst, issue 41's acceptance 2): for each seed,
``aircombat_league_ppo``'s main policy (``best.pt``) against CrankAgent and head to head
against other runs' policies.

For each seed of ``--seeds``, trains ``aircombat_league_ppo`` (with the overrides given) in
a fresh process into ``RUNS/league_seed<seed>_<digest>``, the digest of the resolved config
(the bundled settings with the overrides: each variant, and each change of the bundled
settings, trains and records runs of its own), unless that run dir already holds a
finished run (``result.json``), then plays its ``best.pt`` ``--episodes`` sampled-action
matches with ``ding-lite eval``: against CrankAgent (the experiment's evaluator), and
against each ``--opponent NAME=RUN_DIR`` (``--against RUN_DIR``: that run's ``best.pt``
flying the enemy fighter). Per run it prints win / loss / draw
in percent and the training's wall seconds; then min / median / max of the win rates over
the seeds. Nothing is asserted. ``--jobs 2`` trains two seeds at once (one core and one
torch thread each: wall seconds then measure two runs sharing the machine).

Every finished run's figures are appended as one JSON line to ``--results`` (default
``bench/league_aircombat_results.jsonl``); runs already there are skipped unless
``--again``. Opponents are trained beforehand, e.g.::

    ding-lite serial -c aircombat_selfplay_ppo --seed 0 --exp-dir runs/sp_s0
    ding-lite serial -c aircombat_ppo_long --seed 0 --exp-dir runs/long_s0
    OMP_NUM_THREADS=1 python bench/league_aircombat.py --seeds 1-3 --jobs 2 \\
        --opponent selfplay=runs/sp_s0 --opponent ppo_long=runs/long_s0
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from pendulum_seeds import parse_seeds
from results import ResultsFile

from ding_lite.config.config import compile_config, to_plain
from ding_lite.utils.errors import ConfigError

EXPERIMENT = "aircombat_league_ppo"
EVAL_SEED = 1000  # matches seeded 1000 + seed: never a training seed
_WLD = re.compile(r"win ([0-9.]+)% .*loss ([0-9.]+)% .*draw ([0-9.]+)%")


def parse_opponent(text: str) -> tuple[str, str]:
    """``NAME=RUN_DIR`` as ``(name, run_dir)``."""
    name, sep, run_dir = text.partition("=")
    if not (sep and name and run_dir):
        raise argparse.ArgumentTypeError(f"expected NAME=RUN_DIR, got {text!r}")
    if not (Path(run_dir) / "ckpt" / "best.pt").is_file():
        raise argparse.ArgumentTypeError(f"{run_dir} has no ckpt/best.pt")
    return name, run_dir


def play(run_dir: Path, seed: int, episodes: int, against: list[str]) -> list[float] | str:
    """``[win, loss, draw]`` in percent of ``best.pt``'s matches (``against``: the eval's
    arguments naming the enemy), or the error's last line."""
    cmd = [sys.executable, "-m", "ding_lite", "eval", str(run_dir), "--episodes", str(episodes)]
    cmd += ["--seed", str(EVAL_SEED + seed), *against]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    found = _WLD.search(proc.stdout)
    if proc.returncode != 0 or found is None:
        return (proc.stderr.strip().splitlines() or ["no eval output"])[-1]
    return [float(v) for v in found.groups()]


def config_digest(overrides: list[str]) -> str:
    """8 hex digits of the league's resolved config: the bundled settings with
    ``overrides`` (the seed left at its default)."""
    cfg = to_plain(compile_config(EXPERIMENT, overrides))
    return hashlib.sha1(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:8]


def run_name(seed: int, digest: str) -> str:
    """``league_seed<seed>_<digest>``: each config trains runs of its own."""
    return f"league_seed{seed}_{digest}"


def train_and_play(
    seed: int,
    runs: Path,
    episodes: int,
    opponents: list[tuple[str, str]],
    extra: list[str],
    digest: str,
) -> dict:
    """One league run (or the finished one in its dir) and its matches."""
    run_dir = runs / run_name(seed, digest)
    out: dict = {"seed": seed, "run_dir": str(run_dir), "overrides": extra, "config": digest}
    if not (run_dir / "result.json").is_file():
        cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", EXPERIMENT, "--seed", str(seed)]
        cmd += ["--exp-dir", str(run_dir), "-q", "system.torch_threads=1", *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=4 * 3600)
        if proc.returncode != 0 or not (run_dir / "result.json").is_file():
            return {**out, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    result = json.loads((run_dir / "result.json").read_text())
    out.update(envstep=result["envstep"], wall_s=round(result["wall_s"], 1))
    matches = {"crank": play(run_dir, seed, episodes, [])}
    for name, other in opponents:
        matches[name] = play(run_dir, seed, episodes, ["--against", str(Path(other).resolve())])
    errors = [f"{k}: {v}" for k, v in matches.items() if isinstance(v, str)]
    if errors:
        return {**out, "error": "; ".join(errors)}
    return {**out, "matches": matches}


def show(r: dict) -> None:
    if "error" in r:
        print(f"seed {r['seed']:>3}  failed: {r['error']}", flush=True)
        return
    cells = "  ".join(
        f"{name} {w:5.1f}/{lo:5.1f}/{d:5.1f}" for name, (w, lo, d) in r["matches"].items()
    )
    run = f"{r['envstep']:,} env steps, {r['wall_s']} s"
    print(f"seed {r['seed']:>3}  {cells}  ({run})", flush=True)


def summarize(results: list[dict], seeds: list[int]) -> None:
    done = [r for r in results if r["seed"] in seeds and "matches" in r]
    if not done:
        return
    seeds_done = ",".join(str(r["seed"]) for r in done)
    print(f"\nwin rate of best.pt, seeds {seeds_done}: min / median / max")
    for name in done[0]["matches"]:
        wins = [r["matches"][name][0] for r in done if name in r["matches"]]
        low, mid, high = min(wins), statistics.median(wins), max(wins)
        print(f"  against {name:<10} {low:5.1f} / {mid:5.1f} / {high:5.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-3", help="e.g. 1-3 or 0,4")
    parser.add_argument("--runs", default="runs/league_aircombat", help="where the runs live")
    parser.add_argument("--jobs", type=int, default=1, help="trainings run at once")
    parser.add_argument("--episodes", type=int, default=1000, help="matches per pairing")
    parser.add_argument(
        "--opponent",
        action="append",
        default=[],
        type=parse_opponent,
        help="NAME=RUN_DIR, a trained run to play head to head (repeatable)",
    )
    parser.add_argument(
        "--results", default=str(Path(__file__).with_name("league_aircombat_results.jsonl"))
    )
    parser.add_argument("--again", action="store_true", help="replay runs already recorded")
    parser.add_argument("overrides", nargs="*", help="config overrides of the league, key=value")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    results = ResultsFile(args.results, lambda r: (r["seed"], r.get("config")), show)
    runs = Path(args.runs)
    try:
        mine = config_digest(args.overrides)
    except ConfigError as err:
        parser.error(str(err))
    todo = [s for s in seeds if (s, mine) not in results.done or args.again]
    print(f"{' '.join([EXPERIMENT, *args.overrides])} (config {mine}): win / loss / draw %")
    ours = [r for r in results.recorded if r.get("config") == mine]
    for r in ours:
        if r["seed"] in seeds and r["seed"] not in todo:
            show(r)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [
            pool.submit(train_and_play, s, runs, args.episodes, args.opponent, args.overrides, mine)
            for s in todo
        ]
        for future in as_completed(futures):
            results.record(future.result())
    summarize([r for r in results.recorded if r.get("config") == mine], seeds)


if __name__ == "__main__":
    main()
