"""Does the parallel pipeline learn as much from each env step as the serial one?

A parallel collector rolls out with the policy it has while the learner trains, so the
learner's update can train on data that an older policy collected (policy lag), and a
rollout that lags too far is dropped. This script runs the same workload through four
modes and compares env steps (and iterations, wall seconds) to the target:

- ``serial``: ``python -m ding_lite serial -c EXP``;
- ``serial-1t``: the same with ``OMP_NUM_THREADS=1``: the float order of ``sync-1c``'s
  learner (one thread beside its collector on 2 cores), so the two compute the same run;
- ``sync-1c``: ``python -m ding_lite parallel -c EXP --collectors 1 system.sync_collect=true``
  (the collector rolls out only with the newest policy: no lag, nothing dropped);
- ``async-1c``: ``python -m ding_lite parallel -c EXP_parallel --collectors 1
  env.num_envs=N``: the bundled parallel experiment as it is (its corrections for policy
  lag included), with the serial run's N env copies;
- ``async-2c``: ``python -m ding_lite parallel -c EXP_parallel --collectors 2
  env.num_envs=N/2``, so that each iteration trains on as many samples as in the other
  modes.

Every run gets ``--exp-dir DIR -q --seed S`` and is launched as that command, in a fresh
process. Tasks: ``halfcheetah`` is ``mujoco_ppo`` (gym:HalfCheetah-v5, 8 copies x 256 steps
= 2,048 env steps per iteration) with ``evaluator.stop_value=1500``; ``pendulum`` is
``pendulum_ppo`` (16 x 256 = 4,096 per iteration, target -200). Both pipelines evaluate
every 20,480 env steps (``evaluator.eval_freq`` = 20480 // (n_steps x num_envs): 10 and 5;
the parallel pipeline counts policy versions, one per iteration). A run stops at the
target or at the experiment's ``max_env_step`` (1M, 500k); an unsolved run is reported so.

Runs alternate (for each task, for each seed, every mode, the order rotated by one mode per
seed) so that machine noise spreads over the modes. One JSON line per run is appended to
``--out``: solved, env steps, iterations, wall seconds (launch to exit) and the run's own
``wall_s``, and from result.json the dropped env steps, policy lag (mean, max) and gradient
steps (None where the pipeline does not report them), plus machine, threads, git commit
and time. A line per run is printed as it ends, and a summary per task at the end (or with
``--summary-only``, from the results file): medians and ranges per mode, and each mode's
median env steps and wall seconds as a ratio of serial's. Nothing is asserted. This script
replaces the older experiment that ran serial with a policy one update behind.

    python bench/policy_lag.py --tasks pendulum --seeds 0 1 2 3 4
    python bench/policy_lag.py --tasks halfcheetah --modes serial async-1c --threads 1
    python bench/policy_lag.py --summary-only --since 2025-01-01
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path

MODES = ("serial", "serial-1t", "sync-1c", "async-1c", "async-2c")
#: Modes run on one torch thread whatever ``--threads`` says: serial-1t computes exactly what
#: sync-1c computes (whose learner and collector have one thread each on 2 cores).
ONE_THREAD = ("serial-1t",)
COLLECTORS = {"sync-1c": 1, "async-1c": 1, "async-2c": 2}
EVAL_EVERY = 20_480  # env steps between evaluations, in every mode
# task -> (experiment, its num_envs and n_steps, overrides of every mode, target)
# The experiment the asynchronous modes run (the serial one's parallel version).
PARALLEL_EXPERIMENT = {"halfcheetah": "mujoco_ppo_parallel", "pendulum": "pendulum_ppo_parallel"}
TASKS = {
    "halfcheetah": (
        "mujoco_ppo",
        8,
        256,
        {"env.name": "gym:HalfCheetah-v5", "evaluator.stop_value": "1500"},
        1500.0,
    ),
    "pendulum": ("pendulum_ppo", 16, 256, {}, -200.0),
}
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path(__file__).with_name("policy_lag_results.jsonl")
RESULT_KEYS = ("dropped_env_steps", "policy_lag_mean", "policy_lag_max", "gradient_steps")


def overrides(task: str, mode: str, extra: Iterable[str] = ()) -> dict[str, str]:
    """The ``key=value`` overrides of one run, as a dict in command-line order.

    ``extra`` (``key=value`` strings) wins over the task's settings; its ``env.num_envs``
    and ``policy.collect.n_steps`` also set the eval cadence, and ``env.num_envs`` is what
    ``async-2c`` halves.
    """
    _, num_envs, n_steps, task_overrides, _ = TASKS[task]
    extra_map = dict(item.split("=", 1) for item in extra)
    num_envs = int(extra_map.get("env.num_envs", num_envs))
    n_steps = int(extra_map.get("policy.collect.n_steps", n_steps))
    result = dict(task_overrides)
    result["evaluator.eval_freq"] = str(max(1, EVAL_EVERY // (n_steps * num_envs)))
    result.update(extra_map)
    if mode == "sync-1c":
        result["system.sync_collect"] = "true"
    if mode in COLLECTORS:  # the parallel experiments' own num_envs is per collector
        result.setdefault("env.num_envs", str(num_envs))
    if mode == "async-2c":
        if num_envs % 2:
            raise ValueError(f"async-2c halves env.num_envs, which is odd ({num_envs})")
        result["env.num_envs"] = str(num_envs // 2)
    return result


def command(
    task: str, mode: str, seed: int, exp_dir: Path | str, extra: Iterable[str] = ()
) -> list[str]:
    """The command line of one run (``python -m ding_lite ...``)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
    pipeline = "serial" if mode.startswith("serial") else "parallel"
    experiment = PARALLEL_EXPERIMENT[task] if mode.startswith("async") else TASKS[task][0]
    cmd = [sys.executable, "-m", "ding_lite", pipeline, "-c", experiment]
    cmd += ["--exp-dir", str(exp_dir), "-q", "--seed", str(seed)]
    if mode in COLLECTORS:
        cmd += ["--collectors", str(COLLECTORS[mode])]
    return cmd + [f"{k}={v}" for k, v in overrides(task, mode, extra).items()]


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def git_commit() -> tuple[str | None, bool | None]:
    """The short commit of the checkout, and whether tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        changes = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    except OSError:
        return None, None
    if head.returncode != 0:
        return None, None
    return head.stdout.strip() or None, bool(changes.stdout.strip())


def launch(
    cmd: Sequence[str], exp_dir: Path, *, threads: int | None = None, timeout: float = 7200.0
) -> tuple[dict | None, float, str | None]:
    """Runs ``cmd``; SIGINT after ``timeout`` seconds (the run then writes result.json as
    an interrupted run). Returns (result.json or None, launch-to-exit seconds, error)."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    error = None
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        error = f"timed out after {timeout:g} s"
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
    wall_s = time.perf_counter() - start
    if proc.returncode != 0 and error is None:
        tail = (err or "").strip().splitlines()[-1:] or [""]
        error = f"exit {proc.returncode}: {tail[0][-300:]}"
    result_file = exp_dir / "result.json"
    result = json.loads(result_file.read_text()) if result_file.is_file() else None
    if result is None and error is None:
        error = "no result.json"
    return result, wall_s, error


def row_from_result(
    task: str,
    mode: str,
    seed: int,
    result: dict | None,
    wall_s: float,
    *,
    error: str | None = None,
    threads: int | None = None,
    commit: str | None = None,
    dirty: bool | None = None,
    extra: Sequence[str] = (),
    timestamp: str | None = None,
) -> dict:
    """One results-file row from a run's result.json (None: the run wrote none)."""
    result = result or {}
    envstep, grad_steps = result.get("envstep"), result.get("gradient_steps")
    per_1k = grad_steps * 1000 / envstep if grad_steps is not None and envstep else None
    row = {
        "task": task,
        "mode": mode,
        "seed": seed,
        "solved": bool(result.get("solved", False)),
        "envstep": envstep,
        "train_iter": result.get("train_iter"),
        "wall_s": round(wall_s, 2),
        "in_run_s": result.get("wall_s"),
        **{key: result.get(key) for key in RESULT_KEYS},
        "grad_steps_per_1k": None if per_1k is None else round(per_1k, 3),
        "stop_reason": result.get("stop_reason"),
        "eval_return_mean": result.get("eval_return_mean"),
        "error": error,
        "platform": platform.platform(),
        "machine": platform.processor() or platform.machine(),
        "cores": cores(),
        "torch_threads": threads,  # None: unset, each pipeline's own default
        "commit": commit,
        "dirty": dirty,
        "timestamp": timestamp or datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if extra:
        row["extra"] = list(extra)
    return row


def run_line(row: dict) -> str:
    """One printed line per finished run."""
    head = f"{row['task']:<11} {row['mode']:<8} seed {row['seed']:>2}: "
    if row["envstep"] is None:
        return head + f"FAILED ({row['error']})"
    lag_mean, lag_max = row["policy_lag_mean"], row["policy_lag_max"]
    lag = f"{_fmt(lag_mean, '.2f')}/{_fmt(lag_max, 'd')}"
    line = (
        f"{'solved' if row['solved'] else 'NOT solved':<10} {row['envstep']:>9,} env steps "
        f"{_fmt(row['train_iter'], 'd'):>4} iters  wall {row['wall_s']:>7.1f} s "
        f"(in-run {_fmt(row['in_run_s'], '.1f')})  lag mean/max {lag}  "
        f"dropped {_fmt(row['dropped_env_steps'], ',')}  "
        f"grad/1k {_fmt(row['grad_steps_per_1k'], '.1f')}"
    )
    return head + line + (f"  [{row['error']}]" if row["error"] else "")


def _fmt(value, spec: str) -> str:
    if value is None:
        return "-"
    if spec in ("d", ","):
        value = round(value)
    return format(value, spec)


def _median(values: Iterable) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _cell(values: list, spec: str, marked: bool) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    med = _fmt(statistics.median(values), spec)
    if min(values) != max(values):
        med += f" [{_fmt(min(values), spec)}-{_fmt(max(values), spec)}]"
    return med + ("*" if marked else "")


METRICS = (  # row label, row key, format, marked when a run is unsolved
    ("env steps", "envstep", ",", True),
    ("iterations", "train_iter", "d", True),
    ("wall s", "wall_s", ".0f", True),
    ("in-run s", "in_run_s", ".0f", True),
    ("dropped env steps", "dropped_env_steps", ",", False),
    ("lag mean", "policy_lag_mean", ".2f", False),
    ("lag max", "policy_lag_max", "d", False),
    ("grad steps / 1k", "grad_steps_per_1k", ".1f", False),
)


def summarize(rows: Iterable[dict]) -> str:
    """Per task, a table of the modes: runs solved, then median [min-max] of each metric
    over the runs, then each mode's median env steps and wall seconds over serial's."""
    rows = list(rows)
    tasks = [t for t in TASKS if any(r["task"] == t for r in rows)]
    tasks += sorted({r["task"] for r in rows} - set(tasks))
    out: list[str] = []
    width, label = 30, 18
    for task in tasks:
        of_task = [r for r in rows if r["task"] == task]
        modes = [m for m in MODES if any(r["mode"] == m for r in of_task)]
        modes += sorted({r["mode"] for r in of_task} - set(modes))
        done = {
            m: [r for r in of_task if r["mode"] == m and r["envstep"] is not None] for m in modes
        }
        failed = {m: sum(r["mode"] == m and r["envstep"] is None for r in of_task) for m in modes}
        exp, target = (TASKS[task][0], TASKS[task][4]) if task in TASKS else ("?", None)
        seeds = sorted({r["seed"] for r in of_task})
        out.append(f"{task} ({exp}, target {_fmt(target, 'g')}), seeds {' '.join(map(str, seeds))}")
        out.append(f"{'':<{label}}" + "".join(f"{m:>{width}}" for m in modes))

        def line(name: str, cells: Iterable[str]) -> None:
            out.append(f"{name:<{label}}" + "".join(f"{c:>{width}}" for c in cells))

        cells = []
        for m in modes:
            solved = sum(r["solved"] for r in done[m])
            cell = f"{solved}/{len(done[m])}"
            cells.append(cell + (f" ({failed[m]} failed)" if failed[m] else ""))
        line("solved", cells)
        for name, key, spec, markable in METRICS:
            line(
                name,
                (
                    _cell(
                        [r.get(key) for r in done[m]],
                        spec,
                        markable and not all(r["solved"] for r in done[m]),
                    )
                    for m in modes
                ),
            )
        base = done.get("serial", [])
        for name, key in (("env steps/serial", "envstep"), ("wall/serial", "wall_s")):
            ref = _median(r.get(key) for r in base)
            cells = []
            for m in modes:
                med = _median(r.get(key) for r in done[m])
                cells.append(_fmt(med / ref, ".2f") if med is not None and ref else "-")
            line(name, cells)
        out.append("env steps by seed (+: not solved):")
        for m in modes:
            runs = " ".join(
                f"{r['seed']}:{r['envstep']:,}{'' if r['solved'] else '+'}"
                for r in sorted(done[m], key=lambda r: r["seed"])
            )
            failed_seeds = sorted(
                r["seed"] for r in of_task if r["mode"] == m and r["envstep"] is None
            )
            if failed_seeds:
                runs += f"  (failed: {' '.join(map(str, failed_seeds))})"
            out.append(f"  {m:<9} {runs}".rstrip())
        out.append("")
    if not out:
        return "no runs"
    out.append(
        "Cells: median [min-max] over the runs ([...] left out when all are equal). *: "
        "some runs did not reach the target and count with their final env steps, "
        "iterations and seconds (a lower bound). Ratios: the mode's median over serial's. "
        "Failed runs (no result) are left out."
    )
    return "\n".join(out)


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for text in path.read_text().splitlines():
        if text.strip():
            try:
                rows.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    return rows


def select(rows: list[dict], since: str | None) -> list[dict]:
    """Rows from ``since`` on: a commit (its first row in the file and every row after)
    or an ISO timestamp prefix (rows at or after it)."""
    if not since:
        return rows
    for i, row in enumerate(rows):
        if row.get("commit") and row["commit"].startswith(since):
            return rows[i:]
    return [r for r in rows if (r.get("timestamp") or "") >= since]


def plan(tasks: Sequence[str], seeds: Sequence[int], modes: Sequence[str]) -> list[tuple]:
    """(task, seed, mode) in run order: per task, per seed, every mode, rotated by seed."""
    order = []
    for task in tasks:
        for i, seed in enumerate(seeds):
            shift = i % len(modes)
            order += [(task, seed, mode) for mode in [*modes[shift:], *modes[:shift]]]
    return order


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results (JSON lines)")
    parser.add_argument(
        "--threads", type=int, help="OMP_NUM_THREADS of every run (default: left unset)"
    )
    parser.add_argument(
        "--timeout", type=float, default=7200.0, help="SIGINT a run after this many seconds"
    )
    parser.add_argument(
        "--summary-only", action="store_true", help="summarize --out without running"
    )
    parser.add_argument(
        "--since", help="with --summary-only: rows from this commit or ISO timestamp on"
    )
    parser.add_argument("--extra", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--tmp-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.summary_only:
        print(summarize(select(read_rows(args.out), args.since)))
        return
    for item in args.extra:
        if "=" not in item:
            parser.error(f"--extra takes key=value, not {item!r}")
    commit, dirty = git_commit()
    runs = plan(args.tasks, args.seeds, args.modes)
    print(
        f"{len(runs)} runs, one at a time; {cores()} cores, threads "
        f"{args.threads or 'unset'}, commit {commit or '?'}{' (dirty)' if dirty else ''}; "
        f"appending to {args.out}",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="policy_lag_", dir=args.tmp_dir) as tmp:
        for task, seed, mode in runs:
            exp_dir = Path(tmp) / f"{task}_{mode}_{seed}"
            cmd = command(task, mode, seed, exp_dir, args.extra)
            threads = 1 if mode in ONE_THREAD else args.threads
            result, wall_s, error = launch(cmd, exp_dir, threads=threads, timeout=args.timeout)
            shutil.rmtree(exp_dir, ignore_errors=True)
            row = row_from_result(
                task,
                mode,
                seed,
                result,
                wall_s,
                error=error,
                threads=threads,
                commit=commit,
                dirty=dirty,
                extra=args.extra,
            )
            rows.append(row)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")
            print(run_line(row), flush=True)
    print()
    print(summarize(rows))


if __name__ == "__main__":
    main()
