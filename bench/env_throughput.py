"""Env steps per second of ding_lite's tensor envs beside gymnasium's numpy vector envs.

Usage::

    python bench/env_throughput.py                      # cartpole, all sizes, cuda if present
    python bench/env_throughput.py --envs cartpole,pendulum --sizes 4096,65536 --seconds 1
    python bench/env_throughput.py --envs aircombat --sizes 4096 --threads 1

Each row times only ``step`` calls on pre-generated random actions (for ``aircombat``, P1 is
flown by a CrankAgent, whose ``act`` is timed too, so both aircraft are scripted), after a
warm-up, in
several short windows that alternate between ours and gymnasium's so both see the same
machine load; it reports the median window. An env is benchmarked by its ``create_env``
name; add a gymnasium id to ``GYM_BASELINES`` to get a baseline column for it. Prints
figures only, never asserts on them.

On a machine other processes keep busy, pass ``--threads 1``: torch's multi-threaded
kernels (sin/cos already from 2048 elements) stall whenever one of their threads is
descheduled, which can make a step 100x slower.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from ding_lite.envs import Box, Discrete, Hybrid, TensorVectorEnv, create_env

DEFAULT_SIZES = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536)
# ding_lite env name -> gymnasium id whose numpy vector env (vector_entry_point) is compared.
GYM_BASELINES = {"cartpole": "CartPole-v1", "pendulum": "Pendulum-v1"}
# ding_lite env name -> agent registry name that flies P1 instead of random actions.
SCRIPTED_P1 = {"aircombat": "rule_based"}
ACTION_POOL = 16  # distinct pre-generated action batches, cycled through
WINDOWS = 5


def random_actions(env: TensorVectorEnv, count: int, generator: torch.Generator) -> list:
    """``count`` random action batches for ``env`` on its device."""
    space, n, dev = env.action_space, env.num_envs, env.device

    def box(low: tuple[float, ...], high: tuple[float, ...]) -> torch.Tensor:
        lo, hi = torch.tensor(low), torch.tensor(high)
        return (lo + (hi - lo) * torch.rand(n, len(low), generator=generator)).to(dev)

    batches = []
    for _ in range(count):
        if isinstance(space, Discrete):
            batches.append(torch.randint(0, space.n, (n,), generator=generator).to(dev))
        elif isinstance(space, Box):
            batches.append(box(space.low, space.high))
        elif isinstance(space, Hybrid):
            parts = [box(space.continuous.low, space.continuous.high)]
            parts += [
                torch.randint(0, k, (n, 1), generator=generator).float() for k in space.discrete
            ]
            batches.append(torch.cat(parts, dim=1).to(dev))
        else:
            raise ValueError(f"no random actions for {space!r}")
    return batches


def ours_stepper(name: str, n: int, device: torch.device) -> Callable[[int], None]:
    """Returns ``run(k)``: ``k`` steps of our env, with the device synchronised at the end."""
    env = create_env(name, n, device=device, seed=0)
    obs, _ = env.reset()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    step = env.step
    if name in SCRIPTED_P1:
        from ding_lite.envs.aircombat import create_agent

        agent = create_agent(SCRIPTED_P1[name], num_envs=n, device=device)

        def run_scripted(k: int) -> None:
            nonlocal obs
            for _ in range(k):
                obs, _, _, _, info = step(agent.act(obs, inbound=env.inbound_missile()[:, 0]))
                agent.reset(info["done"])
            sync()

        return run_scripted
    actions = random_actions(env, ACTION_POOL, torch.Generator().manual_seed(0))

    def run(k: int) -> None:
        for i in range(k):
            step(actions[i % ACTION_POOL])
        sync()

    return run


def gym_stepper(name: str, n: int) -> Callable[[int], None] | None:
    """Returns ``run(k)`` for gymnasium's numpy vector env of ``name``, or None if none."""
    gym_id = GYM_BASELINES.get(name)
    if gym_id is None:
        return None
    try:
        import gymnasium
    except ImportError:
        return None
    if gymnasium.spec(gym_id).vector_entry_point is None:
        return None
    env = gymnasium.make_vec(gym_id, num_envs=n, vectorization_mode="vector_entry_point")
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(ACTION_POOL)]
    step = env.step

    def run(k: int) -> None:
        for i in range(k):
            step(actions[i % ACTION_POOL])

    return run


def calibrate(run: Callable[[int], None], seconds: float) -> int:
    """Warms ``run`` up and returns a step count that lasts about ``seconds``."""
    run(3)
    k = 1
    while True:
        start = time.perf_counter()
        run(k)
        elapsed = time.perf_counter() - start
        if elapsed > 0.02 or k >= 1 << 20:
            return max(1, int(k * seconds / max(elapsed, 1e-9)))
        k *= 4


def measure(runs: dict[str, Callable[[int], None]], n: int, seconds: float) -> dict[str, float]:
    """Median env steps/s of each runner over interleaved windows of ``seconds / WINDOWS``."""
    counts = {key: calibrate(run, seconds / WINDOWS) for key, run in runs.items()}
    rates: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(WINDOWS):
        for key, run in runs.items():
            start = time.perf_counter()
            run(counts[key])
            rates[key].append(counts[key] * n / (time.perf_counter() - start))
    return {key: statistics.median(values) for key, values in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser.add_argument("--device", default=default_device, choices=("cpu", "cuda"))
    parser.add_argument("--envs", default="cartpole", help="comma-separated env names")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--seconds", type=float, default=0.5, help="time per env and size")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"device={device} torch={torch.__version__} threads={torch.get_num_threads()}")
    header = f"{'env':<10} {'N':>7} {'ours steps/s':>14} {'gymnasium steps/s':>18} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    with torch.inference_mode():
        for name in args.envs.split(","):
            for n in sizes:
                runs = {"ours": ours_stepper(name, n, device)}
                baseline = gym_stepper(name, n)
                if baseline is not None:
                    runs["gym"] = baseline
                rates = measure(runs, n, args.seconds)
                gym = rates.get("gym")
                gym_col = f"{gym:>18,.0f}" if gym else f"{'-':>18}"
                ratio = f"{rates['ours'] / gym:>7.2f}" if gym else f"{'-':>7}"
                print(f"{name:<10} {n:>7} {rates['ours']:>14,.0f} {gym_col} {ratio}", flush=True)


if __name__ == "__main__":
    main()
