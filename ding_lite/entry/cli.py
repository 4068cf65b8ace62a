"""The ``ding-lite`` command (also ``python -m ding_lite``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ding_lite.utils.errors import DingLiteError

# PPO flag -> dotted config key.
SHORTHANDS = {
    "learning_rate": ("policy.learn.learning_rate", float),
    "n_steps": ("policy.collect.n_steps", int),
    "batch_size": ("policy.learn.batch_size", int),
    "n_epochs": ("policy.learn.n_epochs", int),
    "gamma": ("policy.collect.gamma", float),
    "gae_lambda": ("policy.collect.gae_lambda", float),
    "clip_epsilon": ("policy.learn.clip_ratio", float),
    "value_loss_coef": ("policy.learn.value_weight", float),
    "entropy_coef": ("policy.learn.entropy_weight", float),
    "num_envs": ("env.num_envs", int),
    "save_interval": ("learner.hook.save_ckpt_after_iter", int),
    "log_interval": ("learner.hook.log_show_after_iter", int),
    "max_env_steps": ("max_env_step", int),
}


def _add_run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--config",
        required=False,
        help="bundled experiment (cartpole_ppo, pendulum_ppo, gym_ppo) or a .py/.yaml file",
    )
    parser.add_argument("--seed", type=int, help="random seed (config key seed)")
    parser.add_argument("--exp-dir", help="where the run writes (default ./<exp_name>)")
    parser.add_argument("--device", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--max-train-iter", type=int, help="stop after this many iterations")
    parser.add_argument(
        "--resume", metavar="EXP_DIR", help="continue a run from its newest checkpoint"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    group = parser.add_argument_group("PPO shorthands (each sets one config key)")
    for name, (key, typ) in SHORTHANDS.items():
        group.add_argument(f"--{name.replace('_', '-')}", type=typ, dest=name, help=f"sets {key}")
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="key.sub=value",
        help="dotted config overrides, checked against the defaults",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ding-lite", description="Hook-driven PPO training: serial in one process."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serial = sub.add_parser("serial", help="train in one process")
    _add_run_args(serial)
    return parser


def _overrides(args: argparse.Namespace) -> list[str]:
    items = []
    for name, (key, _) in SHORTHANDS.items():
        value = getattr(args, name)
        if value is not None:
            items.append(f"{key}={value}")
    return items + list(args.overrides)


def _summary(result: dict) -> str:
    status = "solved" if result["solved"] else "not solved"
    return (
        f"{status}: eval return {result['eval_return_mean']:.2f} over {result['eval_episodes']} "
        f"episodes, {result['envstep']} env steps, {result['train_iter']} iterations, "
        f"{result['wall_s']:.1f} s ({result['sps']:,.0f} SPS)"
    )


def _serial(args: argparse.Namespace) -> int:
    from ding_lite.entry.serial import serial_pipeline

    if bool(args.config) == bool(args.resume):
        raise DingLiteError("serial needs either -c EXPERIMENT_OR_FILE or --resume EXP_DIR")
    policy = serial_pipeline(
        args.config,
        seed=args.seed,
        overrides=_overrides(args),
        exp_dir=args.exp_dir,
        device=args.device,
        max_train_iter=args.max_train_iter,
        resume=args.resume,
        progress=not args.quiet,
    )
    result = policy.result
    print(_summary(result))
    print(f"run dir: {result['exp_dir']}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return {"serial": _serial}[args.command](args)
    except DingLiteError as err:
        print(f"ding-lite: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ding-lite: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
