"""Collection speed with double buffering: ``collector.async_factor`` K = 1 vs 2 vs 4.

Builds the serial collector the way a run does (``SerialCollector.from_config``) on a
gymnasium env with ``vector_mode=async`` (one subprocess per copy) and a PPO policy on the
CPU, and times whole rollouts (``collect()``: policy inference and env steps; the advantages
are the learner's, not timed here). With K > 1 the copies are K groups: while group g's
subprocesses step, this process computes group g + 1's actions, so inference overlaps
stepping; K = 1 waits for every step.

The env must cost real CPU per step, else the pipes dominate. By default it is MuJoCo's
``Hopper-v5``; ``--env busy`` (or when ``mujoco`` is missing) takes gymnasium's CartPole
wrapped in ``BusyStep``, which spins ``--busy-ms`` (0.2) milliseconds of CPU in every step
(a busy loop on ``time.perf_counter``, not a sleep, so the core is really taken).

Each run times ``--rollouts`` rollouts per K after one warm-up rollout, the K values taking
turns run by run so that all see the same machine load; printed per K: env steps per
second (min / median / max over ``--runs``) and the median's ratio to K = 1. The overlap
needs free cores: the copies' subprocesses and this process run at once. Nothing is
asserted.

    python bench/async_collect.py                                 # Hopper-v5, 8 copies
    python bench/async_collect.py --env busy --busy-ms 0.5 --factors 1,2,4 --runs 7
    python bench/async_collect.py --env busy --busy-ms 1 --num-envs 2 --factors 1,2 \\
        "policy.model.hidden_sizes=[1024,1024]"                # inference as costly as a step
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# A script beside this one named like a package (once bench/mujoco.py) would shadow it (the
# script's folder leads sys.path); this script needs nothing beside it.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import gymnasium  # noqa: E402
import torch  # noqa: E402

from ding_lite.config import compile_config  # noqa: E402
from ding_lite.envs.buffered import build_collector_env  # noqa: E402
from ding_lite.policy import create_policy  # noqa: E402
from ding_lite.worker.collector import SerialCollector  # noqa: E402

BUSY_ID = "BusyStep-v0"


class BusyStep(gymnasium.Wrapper):
    """A gymnasium env whose every step also spins ``busy_ms`` milliseconds of CPU."""

    def __init__(self, env: gymnasium.Env, busy_ms: float) -> None:
        super().__init__(env)
        self.busy_s = busy_ms / 1000.0

    def step(self, action: Any) -> Any:
        end = time.perf_counter() + self.busy_s
        while time.perf_counter() < end:
            pass
        return self.env.step(action)


def busy_env(base: str = "CartPole-v1", busy_ms: float = 0.2, **kwargs: Any) -> gymnasium.Env:
    """``base`` (a gymnasium id) wrapped in :class:`BusyStep`."""
    return BusyStep(gymnasium.make(base, **kwargs), busy_ms)


# Registered at import: the copies' subprocesses are forked from this one and see it.
gymnasium.register(BUSY_ID, entry_point=busy_env)


def env_overrides(args: argparse.Namespace) -> list[str]:
    """Dotted config overrides naming the env to step."""
    name = args.env
    if name == "hopper":
        if importlib.util.find_spec("mujoco") is not None:
            return ["env.name=gym:Hopper-v5"]
        print("mujoco is not installed: using --env busy")
        name = "busy"
    if name == "busy":
        return [f"env.name=gym:{BUSY_ID}", f"env.kwargs.busy_ms={args.busy_ms}"]
    return [f"env.name=gym:{name}"]


def build(args: argparse.Namespace, k: int) -> SerialCollector:
    """The collector of a run with async_factor ``k``."""
    overrides = env_overrides(args) + [
        "env.vector_mode=async",
        f"env.num_envs={args.num_envs}",
        f"policy.collect.n_steps={args.n_steps}",
        f"collector.async_factor={k}",
        *args.overrides,
    ]
    cfg = compile_config("gym_ppo", overrides, seed=0)
    env = build_collector_env(cfg, cfg.env.num_envs, "cpu", cfg.seed)
    policy = create_policy(
        cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space, device="cpu"
    )
    return SerialCollector.from_config(env, policy, cfg, cfg.seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="hopper", help="hopper, busy or a gymnasium id")
    parser.add_argument("--busy-ms", type=float, default=0.2, help="CPU ms per step (busy)")
    parser.add_argument("--factors", default="1,2,4", help="async_factor values to compare")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--n-steps", type=int, default=64, help="env steps per copy per rollout")
    parser.add_argument("--rollouts", type=int, default=4, help="timed rollouts per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (inference)")
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. a wider policy")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    factors = [int(k) for k in args.factors.split(",")]
    collectors = {k: build(args, k) for k in factors}
    sps: dict[int, list[float]] = {k: [] for k in factors}
    try:
        for collector in collectors.values():
            collector.collect()  # warm-up
        for _ in range(args.runs):
            for k, collector in collectors.items():
                start, envstep = time.perf_counter(), collector.envstep
                for _ in range(args.rollouts):
                    collector.collect()
                sps[k].append((collector.envstep - envstep) / (time.perf_counter() - start))
    finally:
        for collector in collectors.values():
            collector.close()
    env = collectors[factors[0]].env
    print(
        f"{env.name}, {args.num_envs} copies (vector_mode=async), {args.n_steps} steps per "
        f"rollout, {args.rollouts} rollouts x {args.runs} runs, torch threads {args.threads}"
    )
    base = statistics.median(sps[factors[0]])
    print(f"{'async_factor':>12}  {'SPS min':>9}  {'median':>9}  {'max':>9}  {'vs first':>8}")
    for k in factors:
        low, mid, high = min(sps[k]), statistics.median(sps[k]), max(sps[k])
        print(f"{k:>12}  {low:>9.0f}  {mid:>9.0f}  {high:>9.0f}  {mid / base:>7.2f}x")


if __name__ == "__main__":
    main()
