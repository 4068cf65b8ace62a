"""Air-combat env: the CrankAgent's win rates and the env's steps per second.

Usage::

    python bench/aircombat.py                        # 1000 episodes per match-up, N=4096
    python bench/aircombat.py --episodes 200 --device cuda --threads 1
    python bench/aircombat.py --ckpt aircombat_ppo/ckpt   # adds a trained-PPO row

Win rates: P1 plays ``--episodes`` env copies side by side, one seeded episode each (the
first episode of every copy, so short episodes are not over-counted); rates come with
Wilson 95% intervals. P1 is the CrankAgent against placeholder, random and the CrankAgent,
then an untrained PPO policy of ``aircombat_ppo`` (seeded, deterministic eval actions) and,
with ``--ckpt``, a trained one, each against the CrankAgent. Throughput: ``--num-envs``
copies with both sides scripted by CrankAgents (P1's ``act`` included), timed after a
warm-up over several windows; the median window is reported. Prints figures only, never
asserts on them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from ding_lite.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.aircombat import create_agent
from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy, policy_from_checkpoint
from ding_lite.utils.rng import set_seed
from ding_lite.utils.stats import wilson_interval
from ding_lite.worker.learner.base_learner import read_checkpoint

# P1's controller: maps (env, obs) to an action and sees the done mask after each step.
Pilot = tuple[Callable[[TensorVectorEnv, torch.Tensor], Any], Callable[[torch.Tensor], None]]


def crank_match(opponent: str, episodes: int, device: str, seed: int) -> tuple:
    """The env and P1 pilot of a CrankAgent (P1) against ``opponent``."""
    env = create_env("aircombat", episodes, device=device, seed=seed, opponent=opponent)
    agent = create_agent("rule_based", num_envs=episodes, device=device, seed=seed)
    return env, (lambda e, obs: agent.act(obs, inbound=e.inbound_missile()[:, 0]), agent.reset)


def ppo_match(ckpt: str | None, episodes: int, device: str, seed: int) -> tuple:
    """The env (as ``aircombat_ppo`` builds it) and P1 pilot of a PPO policy.

    Without ``ckpt`` the policy is freshly initialised from ``seed``: the untrained row.
    """
    cfg = compile_config("aircombat_ppo", seed=seed, device=device)
    set_seed(seed)
    env = build_env(cfg, episodes, torch.device(device), seed)
    spaces = dict(obs_shape=env.obs_shape, action_space=env.action_space, device=device)
    if ckpt is None:
        policy = create_policy(cfg.policy, **spaces)
    else:
        path, state = read_checkpoint(ckpt)
        policy = policy_from_checkpoint(cfg, path, state, **spaces)
    act = policy.eval_mode.forward
    return env, (lambda e, obs: act(obs), lambda done: None)


def play(env: TensorVectorEnv, pilot: Pilot, episodes: int) -> dict[str, float]:
    """Runs one episode per copy with ``pilot`` flying P1; counts P1's outcomes."""
    act, reset = pilot
    obs, _ = env.reset()
    outcome = torch.zeros(episodes, device=env.device)
    length = torch.zeros(episodes, device=env.device)
    finished = torch.zeros(episodes, dtype=torch.bool, device=env.device)
    for _ in range(env.max_episode_steps):
        obs, _, _, _, info = env.step(act(env, obs))
        reset(info["done"])
        combat = info["combat"]
        first = combat["mask"] & ~finished
        outcome = torch.where(first, combat["outcome"], outcome)
        length = torch.where(first, combat["length"].float(), length)
        finished |= first
    if not bool(finished.all()):
        raise RuntimeError("some episodes outlived the time limit; is it disabled?")
    return {
        "win": int((outcome == 1).sum()),
        "loss": int((outcome == -1).sum()),
        "draw": int((outcome == 0).sum()),
        "length": float(length.mean()),
    }


def throughput(num_envs: int, device: str, seconds: float, windows: int = 5) -> float:
    """Median env steps per second with CrankAgents on both sides."""
    env = create_env("aircombat", num_envs, device=device, seed=0, opponent="rule_based")
    agent = create_agent("rule_based", num_envs=num_envs, device=device)
    obs, _ = env.reset()

    def run(steps: int) -> None:
        nonlocal obs
        for _ in range(steps):
            action = agent.act(obs, inbound=env.inbound_missile()[:, 0])
            obs, _, _, _, info = env.step(action)
            agent.reset(info["done"])
        if env.device.type == "cuda":
            torch.cuda.synchronize(env.device)

    run(20)  # warm-up
    start = time.perf_counter()
    run(20)
    steps = max(20, int(seconds * 20 / (time.perf_counter() - start)))
    rates = []
    for _ in range(windows):
        start = time.perf_counter()
        run(steps)
        rates.append(steps * num_envs / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per match-up")
    parser.add_argument("--num-envs", type=int, default=4096, help="copies for throughput")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=1.0, help="per timing window")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--ckpt", default=None, help="a trained aircombat_ppo checkpoint")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    n, dev, seed = args.episodes, args.device, args.seed
    print(f"P1 vs P2 over {n} seeded episodes per match-up, 95% Wilson CI")
    matches = [
        (f"CrankAgent vs {opponent}", lambda o=opponent: crank_match(o, n, dev, seed))
        for opponent in ("placeholder", "random", "rule_based")
    ]
    matches.append(("untrained PPO vs rule_based", lambda: ppo_match(None, n, dev, seed)))
    if args.ckpt:
        matches.append(("trained PPO vs rule_based", lambda: ppo_match(args.ckpt, n, dev, seed)))
    with torch.inference_mode():
        for label, build in matches:
            env, pilot = build()
            counts = play(env, pilot, n)
            parts = []
            for key, name in (("win", "P1 win"), ("loss", "P2 win"), ("draw", "draw")):
                lo, hi = wilson_interval(counts[key], n)
                parts.append(f"{name} {counts[key] / n:6.1%} [{lo:6.1%}, {hi:6.1%}]")
            print(f"  {label:<30} " + "  ".join(parts) + f"  length {counts['length']:.0f}")

    with torch.inference_mode():
        rate = throughput(args.num_envs, args.device, args.seconds)
    print(f"env steps/s, both sides CrankAgent, N={args.num_envs} on {args.device}: {rate:,.0f}")


if __name__ == "__main__":
    main()
