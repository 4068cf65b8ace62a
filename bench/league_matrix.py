"""The league against plain self-play on biased rock-paper-scissors (issue 41, line 1).

Trains ``matrix_league_ppo`` and ``matrix_selfplay_ppo`` seed by seed and prints, for each,
the final policy's action probabilities and its exploitability (what a best response
gains against them, exactly; 0 at the equilibrium 1/4, 1/2, 1/4), with the minimum, median
and maximum over the seeds. ``--overrides`` apply to both (for trying settings). Prints
figures; asserts nothing.

    python bench/league_matrix.py --seeds 2 3 4
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def final_exploitability(
    experiment: str, seed: int, exp_dir: Path, overrides: list[str]
) -> tuple[list[float], float, float]:
    """``(action probabilities, exploitability, seconds)`` of a run's final policy."""
    import torch

    from ding_lite import serial_pipeline
    from ding_lite.envs.matrix_game import PAYOFFS
    from ding_lite.league.matrix import exploitability
    from ding_lite.worker.learner.league_desk import action_probs

    start = time.perf_counter()
    run = serial_pipeline(
        experiment, seed=seed, overrides=overrides, exp_dir=str(exp_dir), verbose=0
    )
    probs = action_probs(run.model, torch.ones(1, 1))
    return probs, exploitability(PAYOFFS["biased_rps"], probs), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument(
        "--experiments", nargs="+", default=["matrix_league_ppo", "matrix_selfplay_ppo"]
    )
    parser.add_argument("--overrides", nargs="*", default=[])
    args = parser.parse_args(argv)
    gaps: dict[str, list[float]] = {name: [] for name in args.experiments}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for name in args.experiments:
                probs, gap, seconds = final_exploitability(
                    name, seed, Path(tmp) / f"{name}_{seed}", args.overrides
                )
                gaps[name].append(gap)
                shown = ", ".join(f"{p:.3f}" for p in probs)
                print(
                    f"{name:<22} seed {seed}: ({shown})  exploitability {gap:.3f}  {seconds:.0f} s",
                    flush=True,
                )
    for name, values in gaps.items():
        print(
            f"{name:<22} exploitability over seeds {args.seeds}: min {min(values):.3f}, "
            f"median {statistics.median(values):.3f}, max {max(values):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
