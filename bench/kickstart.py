"""Kickstarting: env steps to an experiment's target with a teacher, against from scratch.

A teacher is trained first (the experiment itself, on ``--teacher-seed``, until its target),
then for each of ``--seeds`` (seeds the kickstart settings were not tuned on) the
experiment runs from scratch and kickstarted from that teacher
(``policy.learn.kickstart.teacher``), each until the experiment's target or its
``max_env_step``. Prints, per seed, the env steps each needed (an unsolved run counts its
whole budget, marked ``*``) and the ratio, then min / median / max. Runs on one thread per
run, one run at a time; asserts nothing.

    python bench/kickstart.py --experiment cartpole_ppo --seeds 10 11 12 13 14
    python bench/kickstart.py --experiment pendulum_ppo --seeds 10 11 12 \\
        --kickstart decay_iters=20 value_coef=0.5
    python bench/kickstart.py --experiment pendulum_ppo --teacher agent:energy

``--teacher agent:NAME`` kickstarts from a scripted teacher of the env instead
(``ding_lite.envs.teachers``); nothing is trained first then.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path


def train(experiment: str, seed: int, exp_dir: Path, overrides: list[str]) -> dict:
    """One serial run; its result.json."""
    from ding_lite import serial_pipeline

    serial_pipeline(experiment, overrides=overrides, seed=seed, exp_dir=str(exp_dir), verbose=0)
    return json.loads((exp_dir / "result.json").read_text())


def steps(result: dict) -> str:
    return f"{result['envstep']:>8,}{'' if result['solved'] else '*'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="cartpole_ppo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[10, 11, 12, 13, 14])
    parser.add_argument("--teacher-seed", type=int, default=100)
    parser.add_argument(
        "--teacher",
        help="a trained run dir, or a scripted teacher (agent:NAME), instead of training one",
    )
    parser.add_argument(
        "--kickstart",
        nargs="*",
        default=["decay_iters=10"],
        help="policy.learn.kickstart settings, key=value (default: decay_iters=10)",
    )
    args = parser.parse_args()
    kickstart = [f"policy.learn.kickstart.{kv}" for kv in args.kickstart]
    with tempfile.TemporaryDirectory(prefix="dl_kickstart_") as tmp:
        root = Path(tmp)
        teacher: Path | str = Path(args.teacher) if args.teacher else root / "teacher"
        if args.teacher and args.teacher.startswith("agent:"):
            teacher = args.teacher  # scripted: nothing to train or load
        if not args.teacher:
            result = train(args.experiment, args.teacher_seed, Path(teacher), [])
            print(f"teacher: seed {args.teacher_seed}, {steps(result)} env steps, "
                  f"eval return {result['eval_return_mean']:.1f}")  # fmt: skip
        print(f"{args.experiment}, kickstart {' '.join(args.kickstart)}")
        print(f"{'seed':>6} {'scratch':>9} {'kickstart':>9} {'ratio':>6}")
        ratios = []
        for seed in args.seeds:
            scratch = train(args.experiment, seed, root / f"scratch_{seed}", [])
            kicked = train(
                args.experiment,
                seed,
                root / f"kick_{seed}",
                [f"policy.learn.kickstart.teacher={teacher}", *kickstart],
            )
            ratio = kicked["envstep"] / scratch["envstep"]
            ratios.append(ratio)
            print(f"{seed:>6} {steps(scratch)} {steps(kicked)} {ratio:>6.2f}", flush=True)
        print(
            f"ratio kickstart / scratch: min {min(ratios):.2f}  median "
            f"{statistics.median(ratios):.2f}  max {max(ratios):.2f}  (* unsolved: its budget)"
        )


if __name__ == "__main__":
    main()
