"""Air-combat env: the CrankAgent's win rates and the env's steps per second.

Usage::

    python bench/aircombat.py                        # 1000 episodes per match-up, N=4096
    python bench/aircombat.py --episodes 200 --device cuda --threads 1

Win rates: P1 (the CrankAgent) plays ``--episodes`` env copies side by side, one seeded
episode each (the first episode of every copy, so short episodes are not over-counted),
against each opponent; rates come with Wilson 95% intervals. Throughput: ``--num-envs``
copies with both sides scripted by CrankAgents (P1's ``act`` included), timed after a
warm-up over several windows; the median window is reported. Prints figures only, never
asserts on them.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from ding_lite.envs import create_env
from ding_lite.envs.aircombat import create_agent

Z95 = 1.959964


def wilson(successes: int, total: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion."""
    p = successes / total
    denom = 1 + Z95**2 / total
    centre = (p + Z95**2 / (2 * total)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / total + Z95**2 / (4 * total**2)) / denom
    return centre - half, centre + half


def play(opponent: str, episodes: int, device: str, seed: int) -> dict[str, float]:
    """Runs one episode per copy, CrankAgent (P1) against ``opponent``; counts outcomes."""
    env = create_env("aircombat", episodes, device=device, seed=seed, opponent=opponent)
    agent = create_agent("rule_based", num_envs=episodes, device=device, seed=seed)
    obs, _ = env.reset()
    outcome = torch.zeros(episodes, device=env.device)
    length = torch.zeros(episodes, device=env.device)
    finished = torch.zeros(episodes, dtype=torch.bool, device=env.device)
    for _ in range(env.max_episode_steps):
        action = agent.act(obs, inbound=env.inbound_missile()[:, 0])
        obs, _, _, _, info = env.step(action)
        agent.reset(info["done"])
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
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    print(f"CrankAgent (P1) over {args.episodes} seeded episodes per opponent, 95% Wilson CI")
    for opponent in ("placeholder", "random", "rule_based"):
        counts = play(opponent, args.episodes, args.device, args.seed)
        n = args.episodes
        parts = []
        for key, label in (("win", "P1 win"), ("loss", "P2 win"), ("draw", "draw")):
            lo, hi = wilson(counts[key], n)
            parts.append(f"{label} {counts[key] / n:6.1%} [{lo:6.1%}, {hi:6.1%}]")
        print(f"  vs {opponent:<11}  " + "  ".join(parts) + f"  mean length {counts['length']:.0f}")

    rate = throughput(args.num_envs, args.device, args.seconds)
    print(f"env steps/s, both sides CrankAgent, N={args.num_envs} on {args.device}: {rate:,.0f}")


if __name__ == "__main__":
    main()
