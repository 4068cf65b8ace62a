"""Observation normalization against the observations' scale: env steps to solve CartPole.

Trains ``gym_ppo`` with ``policy.model.obs_norm=true`` on gymnasium's CartPole-v1 and on the
same env with observations ``x * 1000 + 500``, seed by seed, and prints the env steps each
run took to reach the experiment's target (an evaluation after every iteration), with the
medians and their ratio. The target (issue 13): the scaled median within 1.2x of the
unscaled one. Rounding alone sends two runs apart within a few updates, so single seeds
land within about +-30% of each other: judge the medians. Prints figures; asserts nothing.

    python bench/obs_norm.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

UNSCALED_ID = "CartPole-v1"
SCALED_ID = "DingLiteScaledCartPole-v1"


def make_scaled_cartpole(**kwargs):
    """gymnasium's CartPole-v1 whose observations are ``x * 1000 + 500``."""
    import gymnasium as gym
    import numpy as np
    from gymnasium.wrappers import TransformObservation

    env = gym.make(UNSCALED_ID, **kwargs)
    low = env.observation_space.low.astype(np.float64) * 1000 + 500
    high = env.observation_space.high.astype(np.float64) * 1000 + 500
    space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
    return TransformObservation(env, lambda obs: (obs * 1000 + 500).astype(np.float32), space)


def register_scaled_cartpole() -> None:
    """Registers :data:`SCALED_ID` with gymnasium (once)."""
    import gymnasium as gym

    if SCALED_ID not in gym.registry:
        gym.register(SCALED_ID, entry_point=make_scaled_cartpole, max_episode_steps=500)


def steps_to_solve(
    env_id: str, seed: int, max_env_step: int, exp_dir: Path, overrides: list[str]
) -> int | None:
    """Env steps the run took to reach its target, or None if it did not within budget."""
    from ding_lite import serial_pipeline

    run = serial_pipeline(
        "gym_ppo",
        seed=seed,
        overrides=[
            f"env.name=gym:{env_id}",
            "policy.model.obs_norm=true",
            "evaluator.eval_freq=1",
            *overrides,
        ],
        exp_dir=str(exp_dir),
        max_env_step=max_env_step,
        verbose=0,
    )
    return run.result["envstep"] if run.result["solved"] else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds to run")
    parser.add_argument("--max-env-steps", type=int, default=300_000, help="budget per run")
    parser.add_argument("overrides", nargs="*", help="key.sub=value overrides for both envs")
    args = parser.parse_args(argv)
    register_scaled_cartpole()
    steps: dict[str, list[int | None]] = {UNSCALED_ID: [], SCALED_ID: []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for env_id, runs in steps.items():
                run_dir = Path(tmp) / f"{env_id}_{seed}"
                found = steps_to_solve(env_id, seed, args.max_env_steps, run_dir, args.overrides)
                runs.append(found)
                shown = "not solved" if found is None else f"{found:,} env steps"
                print(f"seed {seed}  {env_id:<28} {shown}", flush=True)
    medians = {}
    for env_id, runs in steps.items():
        solved = [s for s in runs if s is not None]
        medians[env_id] = statistics.median(solved) if len(solved) == len(runs) else None
        print(f"{env_id:<28} solved {len(solved)}/{len(runs)}, median {medians[env_id]}")
    if None not in medians.values():
        ratio = medians[SCALED_ID] / medians[UNSCALED_ID]
        print(f"scaled / unscaled median: {ratio:.2f}x (target: at most 1.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
