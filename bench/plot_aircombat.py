"""Win rate against env steps, from the tensorboard logs of aircombat_ppo runs, as a PNG.

Usage::

    python bench/plot_aircombat.py runs/aircombat_s0 runs/aircombat_s1 --out curve.png

Reads every ``tb/events.out.tfevents.*`` file under each experiment dir (with
``ding_lite.utils.log.read_tb_scalars``: no tensorboard install needed), and
plots ``charts/eval_win_rate`` (deterministic evaluation episodes) as solid lines and
``charts/win_rate`` (the training episodes' recent window) as faint ones, one colour per
run. Also prints each run's last evaluation and the env step where eval first reached
``--target``. Needs matplotlib (``pip install 'ding-lite[render]'``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ding_lite.utils.log import read_tb_scalars

EVAL_TAG = "charts/eval_win_rate"
TRAIN_TAG = "charts/win_rate"


def run_scalars(exp_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """The scalars of all event files of one experiment dir, sorted by step."""
    merged: dict[str, list[tuple[int, float]]] = {}
    files = sorted((exp_dir / "tb").glob("events.out.tfevents.*"))
    if not files:
        raise SystemExit(f"error: no tensorboard event file in {exp_dir / 'tb'}")
    for path in files:
        for tag, points in read_tb_scalars(path).items():
            merged.setdefault(tag, []).extend(points)
    return {tag: sorted(points) for tag, points in merged.items()}


def _label(exp_dir: Path) -> str:
    """``seed S`` from the run's saved config, else the folder's name."""
    try:
        return f"seed {json.loads((exp_dir / 'config.json').read_text())['seed']}"
    except (OSError, ValueError, KeyError):
        return exp_dir.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="experiment dirs (with tb/)")
    parser.add_argument("--out", type=Path, default=Path("aircombat_win_rate.png"))
    parser.add_argument("--target", type=float, default=0.6, help="win rate line")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("error: needs matplotlib: pip install 'ding-lite[render]'") from None

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, exp_dir in enumerate(args.runs):
        scalars = run_scalars(exp_dir)
        colour = f"C{i}"
        evals = scalars.get(EVAL_TAG, [])
        if not evals:
            raise SystemExit(f"error: {exp_dir} logged no {EVAL_TAG}")
        if TRAIN_TAG in scalars:
            steps, values = zip(*scalars[TRAIN_TAG], strict=True)
            ax.plot([s / 1e6 for s in steps], values, color=colour, alpha=0.25, linewidth=0.8)
        steps, values = zip(*evals, strict=True)
        ax.plot([s / 1e6 for s in steps], values, color=colour, label=_label(exp_dir))
        first = next((s for s, v in evals if v >= args.target), None)
        reached = f"{first:,}" if first is not None else "never"
        print(
            f"{exp_dir}: last eval win rate {evals[-1][1]:.1%} at {evals[-1][0]:,} env steps; "
            f">= {args.target:.0%} first at {reached}"
        )
    ax.axhline(args.target, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("env steps (millions)")
    ax.set_ylabel("win rate vs CrankAgent")
    ax.set_ylim(0, 1)
    ax.set_title("aircombat_ppo: eval (solid) and training (faint) win rate")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
