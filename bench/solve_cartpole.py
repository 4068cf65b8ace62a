"""Time to solve CartPole: ding_lite vs Stable-Baselines3 PPO, measured in one run.

One criterion for both: the wall seconds and env steps from building the trainer until the
mean return of the last 20 finished *training* episodes reaches 475 (no evaluation runs in
the measured span). SB3 uses rl-zoo's tuned CartPole-v1 hyperparameters (8 envs, n_steps 32,
batch 256, 20 epochs, gamma 0.98, lambda 0.8, lr 1e-3, no entropy bonus) on gymnasium's
CartPole-v1; ding_lite uses its bundled ``cartpole_ppo`` experiment on its torch CartPole
(the same dynamics). Prints figures; asserts nothing about time.

    pip install -e '.[bench]'
    python bench/solve_cartpole.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

TARGET = 475.0
WINDOW = 20


def run_ding_lite(seed: int, max_env_step: int, exp_dir: Path) -> dict:
    from ding_lite.config import compile_config
    from ding_lite.entry.pipelines.serial import SerialRun
    from ding_lite.entry.run.lifecycle import RunDir
    from ding_lite.worker.learner import LearnerHook

    cfg = compile_config(
        "cartpole_ppo",
        ["evaluator.eval_freq=0", "evaluator.stop_value=none"],
        seed=seed,
        max_env_step=max_env_step,
        exp_dir=str(exp_dir),
    )
    start = time.perf_counter()
    run_dir = RunDir.claim(cfg, resuming=False)
    run = SerialRun(cfg, run_dir)
    hit: dict = {}

    class TrainReturnTarget(LearnerHook):
        """Before each update (right after its rollout), checks the last 20 episodes."""

        def __call__(self, engine) -> None:
            returns = list(run.collector.recent_returns)[-WINDOW:]
            if not hit and len(returns) == WINDOW and sum(returns) / WINDOW >= TARGET:
                hit.update(wall_s=time.perf_counter() - start, envstep=run.collector.envstep)
                engine.request_stop("training return target reached")

    run.learner.register_hook(TrainReturnTarget("train_return_target", 0, position="before_iter"))
    with run_dir:
        run.run(start, verbose=0)
    if not hit:
        return {
            "solved": False,
            "wall_s": time.perf_counter() - start,
            "envstep": run.collector.envstep,
        }
    return {"solved": True, **hit}


def run_sb3(seed: int, max_env_step: int) -> dict:
    import numpy as np
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    start = time.perf_counter()
    hit: dict = {}

    class TrainReturnTarget(BaseCallback):
        def _on_step(self) -> bool:
            buffer = self.model.ep_info_buffer
            if buffer is not None and len(buffer) >= WINDOW:
                last = [info["r"] for info in list(buffer)[-WINDOW:]]
                if float(np.mean(last)) >= TARGET:
                    hit.update(wall_s=time.perf_counter() - start, envstep=self.model.num_timesteps)
                    return False
            return True

    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        n_epochs=20,
        gamma=0.98,
        gae_lambda=0.8,
        learning_rate=1e-3,
        ent_coef=0.0,
        seed=seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=max_env_step, callback=TrainReturnTarget())
    env.close()
    if not hit:
        return {
            "solved": False,
            "wall_s": time.perf_counter() - start,
            "envstep": model.num_timesteps,
        }
    return {"solved": True, **hit}


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--ding-max-steps", type=int, default=1_000_000)
    parser.add_argument("--sb3-max-steps", type=int, default=500_000)
    parser.add_argument("--skip-sb3", action="store_true", help="measure ding_lite only")
    args = parser.parse_args()

    import torch

    # SB3 builds torch.optim.Adam, whose first construction in a process imports
    # torch._dynamo (about 1.4 s here; ding_lite's own Adam does not). Paid once, before
    # any timing, so that neither side's figures include it.
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; target: mean of last "
        f"{WINDOW} training episodes >= {TARGET:g}"
    )
    results: dict[str, list[dict]] = {"ding_lite": [], "sb3": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            row = run_ding_lite(seed, args.ding_max_steps, Path(tmp) / f"ding_{seed}")
            results["ding_lite"].append(row)
            print(f"ding_lite seed {seed}: {_fmt(row)}", flush=True)
            if not args.skip_sb3:
                row = run_sb3(seed, args.sb3_max_steps)
                results["sb3"].append(row)
                print(f"sb3       seed {seed}: {_fmt(row)}", flush=True)

    print()
    print(f"{'trainer':<10} {'solved':>7} {'median s':>9} {'median steps':>13} {'median SPS':>11}")
    for name, rows in results.items():
        if not rows:
            continue
        solved = sum(r["solved"] for r in rows)
        for r in rows:
            r["sps"] = r["envstep"] / r["wall_s"]
        print(
            f"{name:<10} {solved:>3}/{len(rows):<3} {_median(rows, 'wall_s'):>9.2f} "
            f"{_median(rows, 'envstep'):>13,.0f} {_median(rows, 'sps'):>11,.0f}"
        )
    if results["sb3"]:
        ratio = _median(results["ding_lite"], "wall_s") / _median(results["sb3"], "wall_s")
        print(f"ding_lite median wall time / SB3 median wall time = {ratio:.3f}")
    print("(unsolved runs count with the time and steps they used before their step limit)")


def _fmt(row: dict) -> str:
    status = "reached" if row["solved"] else "NOT reached"
    sps = row["envstep"] / row["wall_s"]
    return f"{status} after {row['wall_s']:.2f} s, {row['envstep']:,} env steps ({sps:,.0f} SPS)"


if __name__ == "__main__":
    main()
