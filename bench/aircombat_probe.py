"""Probes of air-combat policies that ``ding-lite eval`` does not make: a checkpoint
against itself, and mixes of two checkpoints against CrankAgent.

Used for the self-play figures in docs/benchmarks.rst (section *Air combat*, *Self-play*)::

    python bench/aircombat_probe.py self RUN                 # blue / red wins, draws
    python bench/aircombat_probe.py mix STEER_RUN FIRE_RUN   # one's rudder, the other's trigger
    python bench/aircombat_probe.py hold RUN --lock-deg 45 --max-km 40
    python bench/aircombat_probe.py launches RUN             # where each side fires, by outcome
    python bench/aircombat_probe.py duel RUN OTHER           # the same, OTHER as the enemy

``RUN`` is a run dir, its ``ckpt`` folder or a ``.pt`` file (``best.pt`` of a run dir);
every probe plays ``--episodes`` matches (default 1,000), one per env copy, from the starts
of ``--seed``, with sampled actions (``--deterministic`` for the most likely ones), and
prints the outcome counts. ``hold`` keeps a policy's trigger off unless the enemy is
within ``--lock-deg`` degrees of the nose and ``--max-km`` km. ``launches`` plays RUN
against CrankAgent and prints, for the matches won, lost and drawn, how many missiles each
side fired and at what range (the first launch and all of them, medians), and how long the
matches lasted; ``duel`` the same with OTHER's policy flying the enemy (on the leading
features of RUN's observation, as ``ding-lite eval --against`` plays it).
"""

from __future__ import annotations

import argparse
import math
import sys

import torch

from ding_lite.entry.trained.predict import load_policy
from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.env import AirCombatEnv
from ding_lite.envs.aircombat.observe import OBSERVE, observe_dim
from ding_lite.utils.errors import CheckpointError


def play_launches(env: AirCombatEnv, act) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Plays each copy's first episode, ``act(obs)`` giving the actions: the outcomes from
    agent 0's side ``[N]``, each copy's launch ranges in km ``[T, N, 2]`` (NaN in steps
    without one; P1, P2) and episode lengths ``[N]``."""
    obs, _ = env.reset()
    outcome = torch.zeros(env.num_envs)
    length = torch.zeros(env.num_envs)
    finished = torch.zeros(env.num_envs, dtype=torch.bool)
    ranges = []
    for t in range(P.MAX_EPISODE_STEPS):
        before = env.fired.clone()
        obs, _, _, _, info = env.step(act(obs))
        km = torch.hypot(env.x[:, 1] - env.x[:, 0], env.y[:, 1] - env.y[:, 0]) / 1000.0
        fired = (env.fired > before) & ~finished[:, None]
        ranges.append(torch.where(fired, km[:, None], math.nan))
        new = info["done"] & ~finished
        side = info["combat"]["outcome"]
        outcome[new] = (side if side.dim() == 1 else side[:, 0])[new]
        length[new] = t + 1
        finished |= info["done"]
        if finished.all():
            break
    return outcome, torch.stack(ranges), length


def play(env: AirCombatEnv, act) -> torch.Tensor:
    """float32 ``[N]``: the outcome of each copy's first episode from agent 0's side, with
    ``act(obs)`` giving the actions."""
    return play_launches(env, act)[0]


def launch_report(
    outcome: torch.Tensor, ranges: torch.Tensor, length: torch.Tensor, enemy: str = "CrankAgent"
) -> list[str]:
    """Lines: per outcome (won, lost, drawn), the matches, each side's launches per match,
    the median range of P1's first launch and of all launches per side, the median length;
    ``enemy`` names P2."""
    lines = []
    # The step of P1's first launch (argmax gives the first of equal maxima; NaN: none).
    first = (~ranges[..., 0].isnan()).to(torch.uint8).argmax(0)
    first_km = ranges[first, torch.arange(outcome.numel()), 0]
    for name, rows in (("won", outcome > 0), ("lost", outcome < 0), ("drawn", outcome == 0)):
        k = int(rows.sum())
        if not k:
            lines.append(f"{name:>5}: no matches")
            continue
        sides = ranges[:, rows, 0], ranges[:, rows, 1]
        count = [int((~side.isnan()).sum()) / k for side in sides]
        at = [side.nanquantile(0.5).item() for side in sides]  # NaN: no launch
        first_at = first_km[rows].nanquantile(0.5).item()
        lines.append(
            f"{name:>5}: {k} matches; P1 fired {count[0]:.2f} a match at {at[0]:.1f} km "
            f"(first {first_at:.1f} km), {enemy} {count[1]:.2f} at {at[1]:.1f} km; "
            f"{length[rows].quantile(0.5).item():.0f} s"
        )
    return lines


def report(label: str, outcome: torch.Tensor, sides: tuple[str, str] = ("win", "loss")) -> str:
    n = outcome.numel()
    won, lost = int((outcome > 0).sum()), int((outcome < 0).sum())
    return (
        f"{label}: {sides[0]} {100 * won / n:.1f}%  {sides[1]} {100 * lost / n:.1f}%  "
        f"draw {100 * (n - won - lost) / n:.1f}%  ({n} episodes)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("probe", choices=("self", "mix", "hold", "launches", "duel"))
    parser.add_argument("runs", nargs="+", help="run dirs or checkpoints (mix, duel: two)")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=123)
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--lock-deg", type=float, default=45.0)
    parser.add_argument("--max-km", type=float, default=math.inf)
    args = parser.parse_args(argv)
    pair = args.probe in ("mix", "duel")
    if len(args.runs) != (2 if pair else 1):
        parser.error(f"'{args.probe}' takes {'two runs' if pair else 'one run'}")
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    try:
        policies = [load_policy(run) for run in args.runs]
    except (CheckpointError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # The observation the policies were trained on (air combat's observe options); in a
    # duel, RUN's: OTHER reads its leading features.
    sizes = [p.obs_shape for p in policies]
    options = {(observe_dim(o),): o for o in OBSERVE}
    if args.probe == "duel" and set(sizes) <= options.keys():
        if sizes[1] > sizes[0]:
            print(
                f"error: {args.runs[1]} observes {list(sizes[1])}, more than "
                f"{args.runs[0]}'s {list(sizes[0])}: give the larger observation's run first",
                file=sys.stderr,
            )
            return 2
        sizes = sizes[:1]
    if len(set(sizes)) > 1 or not set(sizes) <= options.keys():
        print(f"error: observations of {sorted(set(sizes))} do not fit one env", file=sys.stderr)
        return 2
    observe = options[sizes[0]]
    torch.manual_seed(args.seed)
    n, det = args.episodes, args.deterministic
    first = policies[0]
    if args.probe == "self":
        env = AirCombatEnv(
            num_envs=n, seed=args.seed, opponent="self", throttle=1.0, observe=observe
        )
        obs_dim = env.obs_shape[0]

        def act(obs):
            return first.predict(obs.reshape(-1, obs_dim), deterministic=det).reshape(n, 2, -1)

        print(report(f"{args.runs[0]} against itself", play(env, act), ("blue", "red")))
        return 0
    if args.probe == "duel":
        env = AirCombatEnv(
            num_envs=n, seed=args.seed, opponent="self", throttle=1.0, observe=observe
        )
        other, k = policies[1], policies[1].obs_shape[0]

        def duel(obs):
            own = first.predict(obs[:, 0], deterministic=det)
            return torch.stack((own, other.predict(obs[:, 1, :k], deterministic=det)), 1)

        outcome, ranges, length = play_launches(env, duel)
        print(report(f"{args.runs[0]} against {args.runs[1]}", outcome))
        print("\n".join(launch_report(outcome, ranges, length, enemy="P2")))
        return 0
    env = AirCombatEnv(
        num_envs=n, seed=args.seed, opponent="rule_based", throttle=1.0, observe=observe
    )
    if args.probe == "launches":
        outcome, ranges, length = play_launches(
            env, lambda obs: first.predict(obs, deterministic=det)
        )
        print(report(f"{args.runs[0]} against CrankAgent", outcome))
        print("\n".join(launch_report(outcome, ranges, length)))
        return 0
    if args.probe == "mix":
        steer, fire = policies

        def act(obs):
            action = steer.predict(obs, deterministic=det).clone()
            action[:, -1] = fire.predict(obs, deterministic=det)[:, -1]
            return action

        label = f"rudder of {args.runs[0]}, trigger of {args.runs[1]}, against CrankAgent"
    else:
        lock, reach = math.radians(args.lock_deg), args.max_km * 1000.0

        def act(obs):
            action = first.predict(obs, deterministic=det).clone()
            near = obs[:, 6] * P.DISTANCE_SCALE < reach
            on_nose = obs[:, 7].abs() * math.pi < lock
            action[:, -1] *= (near & on_nose).float()
            return action

        label = (
            f"{args.runs[0]}, firing only within {args.lock_deg:g} deg and "
            f"{args.max_km:g} km, against CrankAgent"
        )
    print(report(label, play(env, act)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
