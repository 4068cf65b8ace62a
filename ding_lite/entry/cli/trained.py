"""The ``ding-lite`` commands that use a trained checkpoint: ``eval``, ``render`` and ``export``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import DingLiteError


def _trained_paths(args: argparse.Namespace) -> Any:
    """The run dir, config and checkpoint an eval or render reads; says which if it chose."""
    from ding_lite.entry.trained.run_paths import locate

    run_paths = [a for a in args.paths if "=" not in a]
    args.overrides = [a for a in args.paths if "=" in a]
    if len(run_paths) > 1:
        raise DingLiteError(f"one run dir at most, got {' '.join(run_paths)}")
    paths = locate(run_paths[0] if run_paths else None, args.config, args.ckpt)
    if paths.note:
        print(paths.note, flush=True)
    return paths


def _allow_env_modules(args: argparse.Namespace, paths: Any) -> None:
    """Imports the env modules this eval or render may use: those of ``--import``, and
    those a ``-c`` config names (the user's own). A run dir's config.json names modules
    only: one that is not among these is refused when its env is built."""
    from ding_lite.config.config import compile_config, load_experiment
    from ding_lite.config.modules import named_env_modules
    from ding_lite.envs.env_modules import import_env_modules

    names = list(args.imports)
    if args.config:
        paths.config = load_experiment(paths.config)  # a .py file runs once, here
        names += named_env_modules(compile_config(paths.config, args.overrides).env)
    import_env_modules(names)


def eval_command(args: argparse.Namespace) -> int:
    """``ding-lite eval``: a checkpoint's mean return (and outcome rates) over episodes."""
    from ding_lite.entry.trained import head_to_head as h2h
    from ding_lite.entry.trained.evaluate import evaluate_checkpoint

    if args.cross:
        return _cross_command(args)
    paths = _trained_paths(args)
    _allow_env_modules(args, paths)
    common = {"episodes": args.episodes, "seed": args.seed, "device": args.device}
    spec = args.against
    if spec is not None and h2h.is_policy_spec(spec):
        r = h2h.evaluate_against(paths.config, paths.ckpt, spec, **common, overrides=args.overrides)
    else:
        overrides = args.overrides
        if spec is not None:
            overrides = h2h.scripted_overrides(paths.config, spec, args.overrides)
        r = evaluate_checkpoint(paths.config, paths.ckpt, **common, overrides=overrides)
    low, high = r["ci95"]
    against = "" if spec is None else f" against {spec}"
    print(
        f"{r['checkpoint']} (iteration {r['train_iter']}){against}: return {r['return_mean']:.2f} "
        f"+- {r['return_std']:.2f}, 95% CI of the mean [{low:.2f}, {high:.2f}], over "
        f"{r['n_episodes']} episodes (mean length {r['length_mean']:.1f})"
    )
    if "win_rate" in r:
        print(_outcome_line(r))
    return 0


def _cross_command(args: argparse.Namespace) -> int:
    """``ding-lite eval --cross RUN_DIR ...``: the matrix of win / loss / draw, P1 by row."""
    from ding_lite.entry.trained.head_to_head import cross_play

    if args.paths or args.ckpt or args.config or args.against:
        raise DingLiteError("--cross takes run dirs only (no RUN_DIR, --ckpt, -c or --against)")
    _allow_env_modules(args, None)
    matrix = cross_play(args.cross, episodes=args.episodes, seed=args.seed, device=args.device)
    names = [Path(run).name or str(run) for run in args.cross]
    if len(set(names)) < len(names):
        names = [str(run) for run in args.cross]
    width = max(17, *(len(n) for n in names))
    print(
        f"win / loss / draw % of the row's best.pt (P1) against the column's (P2), "
        f"{args.episodes} episodes each; score: win + draw / 2 against the others"
    )
    print(" " * width + "".join(f"  {n:>17}" for n in names) + "   score")
    for i, (name, row) in enumerate(zip(names, matrix, strict=True)):
        cells = [
            "n/a"
            if r is None
            else f"{100 * r['win_rate']:.1f}/{100 * r['loss_rate']:.1f}/{100 * r['draw_rate']:.1f}"
            for r in row
        ]
        others = [r for j, r in enumerate(row) if j != i and r is not None]
        score = (
            f"{sum(r['win_rate'] + r['draw_rate'] / 2 for r in others) / len(others):6.3f}"
            if others
            else "   n/a"
        )
        print(f"{name:<{width}}" + "".join(f"  {c:>17}" for c in cells) + f"  {score}")
    if any(r is None for row in matrix for r in row):
        print(
            "n/a: the column's policy observes more than the row's env gives (the column's "
            "own row has that pairing, with it as P1); scores leave those out"
        )
    return 0


def _outcome_line(r: dict) -> str:
    """``win 62.3% [59.3, 65.3]  loss ...  draw ...``: rates and 95% Wilson intervals, in %."""
    parts = []
    for name in ("win", "loss", "draw"):
        low, high = r[f"{name}_rate_ci95"]
        parts.append(f"{name} {100 * r[f'{name}_rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]")
    return "  ".join(parts)


def render_command(args: argparse.Namespace) -> int:
    """``ding-lite render``: a video of a checkpoint's policy, or an air-combat PNG."""
    from ding_lite.entry.trained.render import OUTCOME_TEXT, render_match
    from ding_lite.entry.trained.video import render_kind, render_video

    if render_kind(args.out) == "video":  # .mp4, .gif: any env that draws
        paths = _trained_paths(args)
        _allow_env_modules(args, paths)
        v = render_video(
            paths.config,
            paths.ckpt,
            args.out,
            episodes=1 if args.episodes is None else args.episodes,
            seed=args.seed,
            opponent=args.opponent,
            overrides=args.overrides,
        )
        returns = ", ".join(f"{r:.4g}" for r in v["returns"])
        print(
            f"{v['path']}: {len(v['returns'])} episode(s), {v['frames']} frames "
            f"{v['width']}x{v['height']} at {v['fps']:g} fps, returns {returns} "
            f"({v['checkpoint']}, iteration {v['train_iter']})"
        )
        return 0
    if args.episodes not in (None, 1):
        raise DingLiteError("--episodes applies to videos (.mp4, .gif); a .png draws one")
    paths = _trained_paths(args)
    r = render_match(
        paths.config,
        paths.ckpt,
        args.out,
        seed=args.seed,
        opponent=args.opponent,
        overrides=args.overrides,
    )
    fired = r["missiles_fired"]
    print(
        f"{r['path']}: {OUTCOME_TEXT[round(r['outcome'])]} after {r['length']} steps, "
        f"missiles fired {fired[0]}-{fired[1]} ({r['checkpoint']}, iteration {r['train_iter']})"
    )
    return 0


def export_command(args: argparse.Namespace) -> int:
    """``ding-lite export``: a checkpoint's policy as an ONNX or TorchScript file."""
    from ding_lite.entry.trained.export import FORMATS, export_policy

    out = args.out or f"policy{FORMATS[args.format]}"
    info = export_policy(args.run_path, args.format, out=out, sampling=args.sampling)
    print("\n".join(info.describe()))
    return 0
