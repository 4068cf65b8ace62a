"""The ``ding-lite`` command (also ``python -m ding_lite``)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence

from ding_lite import __version__
from ding_lite.entry.interrupts import import_for, sigterm_interrupts
from ding_lite.utils.errors import DingLiteError, DiskFullError
from ding_lite.utils.stop import STOP_REASONS, RunInterrupted, exit_code

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
        help="bundled experiment (e.g. cartpole_ppo, pendulum_ppo, gym_ppo, "
        "cartpole_ppo_parallel) or a .py/.yaml file",
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
        prog="ding-lite", description="Hook-driven PPO training, serial or parallel."
    )
    parser.add_argument(
        "--version", action="version", version=f"ding-lite {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("list", help="list the bundled experiments (env, algorithm, target)")
    serial = sub.add_parser("serial", help="train in one process")
    _add_run_args(serial)
    parallel = sub.add_parser(
        "parallel", help="train with a coordinator, learner and collector processes"
    )
    _add_run_args(parallel)
    parallel.add_argument("--collectors", type=int, help="collector processes (default 2)")
    parallel.add_argument(
        "--learners", type=int, help="ranks of the data-parallel learner (default 1)"
    )
    parallel.add_argument(
        "--launcher", choices=("local", "ray"), help="start workers as processes or Ray actors"
    )
    parallel.add_argument("--ray-address", help="Ray cluster to join (default: a local one)")
    evaluate = sub.add_parser("eval", help="evaluate a checkpoint (the experiment's eval episodes)")
    evaluate.add_argument("-c", "--config", required=True, help="the experiment it was trained on")
    evaluate.add_argument("--ckpt", required=True, help="checkpoint file, or its ckpt/ folder")
    evaluate.add_argument("--episodes", type=int, default=100, help="episodes (default 100)")
    evaluate.add_argument("--seed", type=int, help="seed of the eval env")
    evaluate.add_argument("--device", help="cpu, cuda, cuda:N or auto")
    evaluate.add_argument(
        "overrides", nargs="*", metavar="key.sub=value", help="dotted config overrides"
    )
    render = sub.add_parser(
        "render", help="draw one air-combat episode of a checkpoint's policy to a PNG"
    )
    render.add_argument("-c", "--config", required=True, help="the experiment it was trained on")
    render.add_argument("--ckpt", required=True, help="checkpoint file, or its ckpt/ folder")
    render.add_argument("--out", default="match.png", help="PNG to write (default match.png)")
    render.add_argument("--seed", type=int, default=0, help="seed of the episode (default 0)")
    render.add_argument("--opponent", help="P2's agent (default: the experiment's opponent)")
    render.add_argument(
        "overrides", nargs="*", metavar="key.sub=value", help="dotted config overrides"
    )
    coordinator = sub.add_parser("coordinator", help="serve the coordinator for remote workers")
    _add_run_args(coordinator)
    coordinator.add_argument("--host", help="address to bind (default 127.0.0.1)")
    coordinator.add_argument("--port", type=int, help="port to bind (default: a free one)")
    for role in ("learner", "collector"):
        worker = sub.add_parser(role, help=f"run one {role} for a running coordinator")
        worker.add_argument(
            "--coordinator", required=True, metavar="HOST:PORT", help="the coordinator's address"
        )
        worker.add_argument(
            "-c",
            "--config",
            help="a Python config file to run first, for the hooks and envs it registers "
            "(the coordinator still sends the run's config)",
        )
        worker.add_argument(
            "--worker-id",
            default=f"{role}-{socket.gethostname()}-{os.getpid()}",
            help="unique id of this worker (default: role-host-pid)",
        )
        worker.add_argument("--port", type=int, default=0, help="port to bind (default: free)")
        worker.add_argument(
            "--master-timeout",
            type=float,
            default=60.0,
            help="stop when the coordinator has not answered for this many seconds",
        )
        worker.add_argument("--device", help="cpu, cuda, cuda:N or auto (overrides the config)")
        worker.add_argument("--host", default="127.0.0.1", help="address this worker binds")
        worker.add_argument("--advertise", help="HOST:PORT the coordinator should call back")
        worker.add_argument(
            "--heartbeat-period",
            type=float,
            default=1.0,
            help="seconds between heartbeats to the coordinator (default 1)",
        )
        worker.add_argument(
            "-q", "--quiet", action="store_true", help="log warnings and errors only"
        )
        if role == "learner":
            worker.add_argument(
                "--resident",
                action="store_true",
                help="stay up after the coordinator closes the run, for its next start task",
            )
            worker.add_argument(
                "--dist-timeout",
                type=float,
                default=60.0,
                help="under torchrun (or --learners N): seconds a rank waits for the others "
                "before its group counts as lost (default 60)",
            )
    return parser


def _list(args: argparse.Namespace) -> int:
    """One line per bundled experiment: name, env, algorithm, what "solved" means."""
    from ding_lite.config.config import EXPERIMENTS, get_config

    for name in EXPERIMENTS:
        cfg = get_config(name)
        ev = cfg.evaluator
        where = f"{cfg.env.name} x{cfg.env.num_envs}"
        if name.endswith("_parallel"):
            where += f" per collector, {cfg.system.collectors} collectors"
        if ev.stop_value is None:
            target = "no target"
        else:
            target = f"solved at eval mean >= {ev.stop_value:g} over {ev.n_episodes} episodes"
        limit = f"at most {cfg.max_env_step:,} env steps" if cfg.max_env_step else "no step limit"
        print(f"{name:<24} {where}; {cfg.policy.type}; {target}; {limit}")
    return 0


def _overrides(args: argparse.Namespace) -> list[str]:
    items = []
    for name, (key, _) in SHORTHANDS.items():
        value = getattr(args, name)
        if value is not None:
            items.append(f"{key}={value}")
    return items + list(args.overrides)


def _summary(result: dict) -> str:
    status = "solved" if result["solved"] else "not solved"
    win = result.get("eval_win_rate")
    win_text = "" if win is None else f" (win rate {win:.1%})"
    return (
        f"{status}: eval return {result['eval_return_mean']:.2f} over {result['eval_episodes']} "
        f"episodes{win_text}, {result['envstep']} env steps, {result['train_iter']} iterations, "
        f"{result['wall_s']:.1f} s ({result['sps']:,.0f} SPS)"
    )


def _serial(args: argparse.Namespace) -> int:
    from ding_lite.entry.serial import serial_pipeline

    if not args.config and not args.resume:
        raise DingLiteError("serial needs -c EXPERIMENT_OR_FILE or --resume EXP_DIR")
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
    reason = result["stop_reason"]
    if reason == "diverged":
        print(
            f"ding-lite: error: diverged: {result['skipped_steps']} optimizer steps skipped for "
            "non-finite losses or gradients; lower policy.learn.learning_rate",
            file=sys.stderr,
        )
    # A stop a user's hook asked for (its own reason) is a normal end.
    return exit_code(reason) if reason in STOP_REASONS else 0


def _parallel(args: argparse.Namespace) -> int:
    from ding_lite.entry.parallel import parallel_pipeline

    if not args.config and not args.resume:
        raise DingLiteError("parallel needs -c EXPERIMENT_OR_FILE or --resume EXP_DIR")
    result = parallel_pipeline(
        args.config,
        resume=args.resume,
        seed=args.seed,
        overrides=_overrides(args),
        exp_dir=args.exp_dir,
        device=args.device,
        learners=args.learners,
        collectors=args.collectors,
        launcher=args.launcher,
        ray_address=args.ray_address,
        max_train_iter=args.max_train_iter,
        progress=not args.quiet,
    )
    if args.quiet:
        print(f"run dir: {result['exp_dir']}")
    return exit_code(result["stop_reason"])


def _coordinator(args: argparse.Namespace) -> int:
    from ding_lite.entry.parallel import compile_parallel_config, run_coordinator

    if not args.config and not args.resume:
        raise DingLiteError("coordinator needs -c EXPERIMENT_OR_FILE or --resume EXP_DIR")
    extra = _overrides(args)
    if args.host:
        extra.append(f"system.host={args.host}")
    if args.port is not None:
        extra.append(f"system.coordinator_port={args.port}")
    cfg = compile_parallel_config(
        args.config,
        seed=args.seed,
        overrides=extra,
        exp_dir=args.exp_dir,
        device=args.device,
        max_train_iter=args.max_train_iter,
        resume=args.resume,
    )
    result = run_coordinator(cfg, progress=not args.quiet, resuming=bool(args.resume))
    return exit_code(result["stop_reason"])


def _eval(args: argparse.Namespace) -> int:
    from ding_lite.entry.evaluate import evaluate_checkpoint

    r = evaluate_checkpoint(
        args.config,
        args.ckpt,
        episodes=args.episodes,
        seed=args.seed,
        device=args.device,
        overrides=args.overrides,
    )
    low, high = r["ci95"]
    print(
        f"{r['checkpoint']} (iteration {r['train_iter']}): return {r['return_mean']:.2f} "
        f"+- {r['return_std']:.2f}, 95% CI of the mean [{low:.2f}, {high:.2f}], over "
        f"{r['n_episodes']} episodes (mean length {r['length_mean']:.1f})"
    )
    if "win_rate" in r:
        print(_outcome_line(r))
    return 0


def _outcome_line(r: dict) -> str:
    """``win 62.3% [59.3, 65.3]  loss ...  draw ...``: rates and 95% Wilson intervals, in %."""
    parts = []
    for name in ("win", "loss", "draw"):
        low, high = r[f"{name}_rate_ci95"]
        parts.append(f"{name} {100 * r[f'{name}_rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]")
    return "  ".join(parts)


def _render(args: argparse.Namespace) -> int:
    from ding_lite.entry.render import OUTCOME_TEXT, render_match

    r = render_match(
        args.config,
        args.ckpt,
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


def _worker(args: argparse.Namespace) -> int:
    from ding_lite.config.config import load_experiment
    from ding_lite.entry.parallel import run_worker

    if args.config:  # a .py file registers its hooks and envs as it runs
        load_experiment(args.config)

    return run_worker(
        args.command,
        coordinator=args.coordinator,
        worker_id=args.worker_id,
        device=args.device,
        host=args.host,
        advertise=args.advertise,
        heartbeat_period=args.heartbeat_period,
        port=args.port,
        master_timeout=args.master_timeout,
        quiet=args.quiet,
        resident=getattr(args, "resident", False),
        dist_timeout=getattr(args, "dist_timeout", 60.0),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    # Until a run installs its own handler (and after it restores this one), SIGTERM unwinds
    # like Ctrl-C: one line and exit 143, whether it lands in imports, config or env building.
    sigterm_interrupts()
    try:
        import_for(args.command)
        commands = {
            "list": _list,
            "serial": _serial,
            "eval": _eval,
            "render": _render,
            "parallel": _parallel,
            "coordinator": _coordinator,
            "learner": _worker,
            "collector": _worker,
        }
        return commands[args.command](args)
    except DiskFullError as err:
        print(f"ding-lite: error: {err}", file=sys.stderr)
        return exit_code("disk_full")
    except DingLiteError as err:
        print(f"ding-lite: error: {err}", file=sys.stderr)
        return 2
    except RunInterrupted as stop:  # a run wrote its result.json first
        again = ""
        if stop.resume_dir is not None and args.command in ("serial", "parallel"):
            again = f"; resume with: ding-lite {args.command} --resume {stop.resume_dir}"
        print(f"ding-lite: interrupted ({stop.signal_name}){again}", file=sys.stderr)
        return exit_code("interrupted", stop.signal_name)
    except KeyboardInterrupt:
        print("ding-lite: interrupted (SIGINT)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
