"""``mujoco_ppo`` on MuJoCo for 1M env steps, and SB3's PPO beside it on Hopper-v5.

For each env and seed asked for, one at a time, runs ``ding-lite serial -c mujoco_ppo
env.name=gym:<env> --seed S`` in a fresh process (CleanRL's continuous-control settings,
8 env copies) and reads the final deterministic evaluation (10 episodes) from its
``result.json``. With ``--sb3``, also trains stable-baselines3's PPO with rl-zoo's Hopper
settings (VecNormalize on observations and rewards, 1 env, 512 steps per update, minibatches
of 32, 5 epochs, learning rate 9.80828e-5, gamma 0.999, GAE 0.99, clip 0.2, entropy
0.00229519, value 0.835671, max grad norm 0.7, log-std -2, no orthogonal init, ReLU
[256, 256]) on Hopper-v5 for the same steps and evaluates it the same way (10 episodes,
deterministic, frozen normalization).

Every finished run is appended as one JSON line to ``--results`` (default
``bench/mujoco_results.jsonl``), so the 2-3 hours of runs can be done in parts; runs
already in the file are skipped unless ``--again``. At the end it prints a table of all
runs in the file, the median per env against 0.9x CleanRL's published 1M-step figures
(HalfCheetah 2906, Hopper 2052, Walker2d 2891), and ding_lite against SB3 on Hopper (wall
time and return; rl-zoo's published Hopper return: 2410). Nothing is asserted.

    python bench/mujoco.py --envs HalfCheetah-v5,Hopper-v5,Walker2d-v5 --seeds 0-2
    python bench/mujoco.py --envs Hopper-v5 --seeds 0 --sb3
    python bench/mujoco.py --envs "" --seeds 0 --sb3        # SB3 only

Thread count: torch's default (the cores); ``OMP_NUM_THREADS=1`` gives each run one core,
so two runs can share a 2-core machine (ding_lite's runs are given the same environment).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder is first on sys.path, where "import mujoco" (by
# gymnasium's MuJoCo envs) would find this very file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

CLEANRL_1M = {"HalfCheetah-v5": 2906, "Hopper-v5": 2052, "Walker2d-v5": 2891}
RL_ZOO_HOPPER = 2410
EVAL_EPISODES = 10


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return seeds


def run_ding_lite(env_id: str, seed: int, steps: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="ding_lite_mujoco_") as tmp:
        run = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "mujoco_ppo", "-q"]
        cmd += ["--seed", str(seed), "--exp-dir", str(run), f"env.name=gym:{env_id}"]
        cmd += [f"max_env_step={steps}", *extra]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=6 * 3600)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
        result = json.loads((run / "result.json").read_text())
    return {
        "eval_return": result["eval_return_mean"],
        "eval_std": result["eval_return_std"],
        "envstep": result["envstep"],
        "wall_s": round(wall, 1),
    }


def sb3_settings(preset: str, torch: Any) -> tuple[float, dict]:
    """``(VecNormalize gamma, PPO keyword arguments)`` of a preset: ``rl_zoo_hopper`` (rl-zoo's
    tuned Hopper settings) or ``cleanrl`` (CleanRL's continuous-control defaults, the ones
    ``mujoco_ppo`` copies: 2,048 steps, minibatches of 64, 10 epochs, lr 3e-4 annealed)."""
    if preset == "cleanrl":
        return 0.99, dict(
            n_steps=2048,
            batch_size=64,
            n_epochs=10,
            learning_rate=lambda progress: 3e-4 * progress,
            gamma=0.99,
            gae_lambda=0.95,
            clip_range=0.2,
            clip_range_vf=0.2,
            ent_coef=0.0,
            vf_coef=0.5,
            max_grad_norm=0.5,
            policy_kwargs=dict(log_std_init=0.0, net_arch=dict(pi=[64, 64], vf=[64, 64])),
        )
    return 0.999, dict(
        n_steps=512,
        batch_size=32,
        n_epochs=5,
        learning_rate=9.80828e-05,
        gamma=0.999,
        gae_lambda=0.99,
        clip_range=0.2,
        ent_coef=0.00229519,
        vf_coef=0.835671,
        max_grad_norm=0.7,
        policy_kwargs=dict(
            log_std_init=-2,
            ortho_init=False,
            activation_fn=torch.nn.ReLU,
            net_arch=dict(pi=[256, 256], vf=[256, 256]),
        ),
    )


def run_sb3(env_id: str, seed: int, steps: int, preset: str = "rl_zoo_hopper") -> dict:
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    start = time.perf_counter()
    norm_gamma, settings = sb3_settings(preset, torch)
    env = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed), gamma=norm_gamma)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", **settings)
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - start
    env.training, env.norm_reward = False, False
    returns = []
    eval_env = gym.make(env_id)
    for episode in range(EVAL_EPISODES):
        obs, _ = eval_env.reset(seed=seed + 1_000_003 + episode)
        done, total = False, 0.0
        while not done:
            action, _ = model.predict(env.normalize_obs(obs[None]), deterministic=True)
            obs, reward, terminated, truncated, _ = eval_env.step(action[0])
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return {
        "eval_return": float(np.mean(returns)),
        "eval_std": float(np.std(returns)),
        "envstep": steps,
        "wall_s": round(wall, 1),
    }


def provenance() -> dict:
    """What makes a figure reproducible: torch build, thread count, ding_lite commit."""
    import torch

    commit = subprocess.run(
        ["git", "-C", str(_HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(_HERE), "status", "--porcelain", "--", "../ding_lite"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "commit": commit + ("+changes" if dirty else ""),
    }


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def report(rows: list[dict]) -> None:
    print(
        f"\n{'trainer':<9} {'env':<15} {'seed':>4} {'steps':>9} {'eval return':>15} {'wall s':>8}"
    )
    for r in sorted(rows, key=lambda r: (r["trainer"], r["env"], r["seed"])):
        ret = f"{r['eval_return']:.0f} +- {r['eval_std']:.0f}"
        print(
            f"{r['trainer']:<9} {r['env']:<15} {r['seed']:>4} {r['envstep']:>9,} {ret:>15} "
            f"{r['wall_s']:>8.0f}"
        )
    print()
    for env_id, published in CLEANRL_1M.items():
        mine = [
            r["eval_return"] for r in rows if r["trainer"] == "ding_lite" and r["env"] == env_id
        ]
        if mine:
            median = statistics.median(mine)
            print(
                f"{env_id}: ding_lite median {median:.0f} over {len(mine)} seed(s); "
                f"0.9x CleanRL's {published} = {0.9 * published:.0f}"
            )
    ours = {r["seed"]: r for r in rows if r["trainer"] == "ding_lite" and r["env"] == "Hopper-v5"}
    for r in rows:
        if r["trainer"] == "sb3" and r["seed"] in ours:
            mine = ours[r["seed"]]
            print(
                f"Hopper-v5 seed {r['seed']}: ding_lite {mine['eval_return']:.0f} in "
                f"{mine['wall_s']:.0f} s, SB3 {r['eval_return']:.0f} in {r['wall_s']:.0f} s: "
                f"wall {mine['wall_s'] / r['wall_s']:.2f}x SB3's; return "
                f"{mine['eval_return'] / RL_ZOO_HOPPER:.2f}x rl-zoo's {RL_ZOO_HOPPER}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="HalfCheetah-v5,Hopper-v5,Walker2d-v5")
    parser.add_argument("--seeds", default="0-2", help="e.g. 0-2 or 0,2")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--sb3", action="store_true", help="also SB3's PPO on Hopper-v5")
    parser.add_argument(
        "--sb3-cleanrl",
        action="store_true",
        help="also SB3's PPO with CleanRL's settings on each of --envs (a same-machine peer)",
    )
    parser.add_argument("--results", default=str(Path(__file__).with_name("mujoco_results.jsonl")))
    parser.add_argument("--again", action="store_true", help="re-run runs already in the file")
    parser.add_argument("overrides", nargs="*", help="config overrides for ding_lite, key=value")
    args = parser.parse_args()
    path = Path(args.results)
    # A run is known by the steps asked for: ding_lite's runs end on a whole iteration, a
    # little past them (1,001,472 env steps for 1M).
    done = {(r["trainer"], r["env"], r["seed"], r["steps"]) for r in load(path)}
    envs = [e for e in args.envs.split(",") if e]  # --envs "" with --sb3: SB3 only
    plan = [("ding_lite", e, s) for e in envs for s in parse_seeds(args.seeds)]
    if args.sb3:
        plan += [("sb3", "Hopper-v5", s) for s in parse_seeds(args.seeds)]
    if args.sb3_cleanrl:
        plan = [("sb3_cleanrl", e, s) for e in envs for s in parse_seeds(args.seeds)]
    for trainer, env_id, seed in plan:
        if (trainer, env_id, seed, args.steps) in done and not args.again:
            print(f"{trainer} {env_id} seed {seed}: in {path} already (--again to re-run)")
            continue
        print(f"{trainer} {env_id} seed {seed}: training {args.steps:,} env steps...", flush=True)
        if trainer == "sb3":
            figures = run_sb3(env_id, seed, args.steps)
        elif trainer == "sb3_cleanrl":
            figures = run_sb3(env_id, seed, args.steps, preset="cleanrl")
        else:
            figures = run_ding_lite(env_id, seed, args.steps, args.overrides)
        row = {"trainer": trainer, "env": env_id, "seed": seed, "steps": args.steps, **figures}
        row.update(date=time.strftime("%Y-%m-%d"), **provenance())
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(f"  eval return {row['eval_return']:.1f} in {row['wall_s']:.0f} s", flush=True)
    report([r for r in load(path) if r["steps"] == args.steps])


if __name__ == "__main__":
    main()
