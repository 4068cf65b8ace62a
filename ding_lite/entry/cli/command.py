"""The ``ding-lite`` command (also ``python -m ding_lite``): what each subcommand does; its
arguments are in :mod:`.arguments`."""

from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
from collections.abc import Sequence
from typing import Any

from ding_lite.entry.cli.arguments import SHORTHANDS, build_parser
from ding_lite.entry.cli.interrupts import import_for
from ding_lite.entry.cli.trained import eval_command, export_command, render_command
from ding_lite.utils.errors import DingLiteError, DiskFullError
from ding_lite.utils.stop import (
    STOP_REASONS,
    RunInterrupted,
    exit_code,
    exit_now_if_threads_linger,
    sigterm_interrupts,
)


def _list(args: argparse.Namespace) -> int:
    """One line per bundled experiment: name, env, algorithm, what "solved" means."""
    from ding_lite.config.config import EXPERIMENTS, get_config
    from ding_lite.config.zoo import zoo_row

    for name in EXPERIMENTS:
        cfg = get_config(name)
        ev = cfg.evaluator
        where = f"{cfg.env.name} x{cfg.env.num_envs}"
        if name.endswith("_parallel"):
            where += f" per collector, {cfg.system.collectors} collectors"
        shown = {k: v for k, v in cfg.env.kwargs.items() if k in ("observe", "opponent")}
        if shown:  # what changes the task: hidden velocities, self-play
            where += " (" + ", ".join(f"{k}={v}" for k, v in shown.items()) + ")"
        row = zoo_row(name)
        if row is not None:  # a zoo run trains its whole budget; its yardstick is rl-zoo's
            target = f"rl-zoo PPO {row.rl_zoo:g} on {row.rl_zoo_task}"
            limit = f"trains {row.budget:,} env steps, then {ev.n_episodes} eval episodes"
        elif ev.stop_value is None:
            target = "no target"
        else:
            target = f"solved at eval mean >= {ev.stop_value:g} over {ev.n_episodes} episodes"
        if row is None:
            limit = (
                f"at most {cfg.max_env_step:,} env steps" if cfg.max_env_step else "no step limit"
            )
        algo = cfg.policy.type
        if cfg.policy.model.core != "none":
            algo += f"+{cfg.policy.model.core.upper()}"
        if cfg.policy.model.sde:
            algo += "+gSDE"
        if cfg.policy.learn.adv_estimator not in ("gae", "gae_no_norm"):
            algo += f" ({cfg.policy.learn.adv_estimator}"
            algo += ", no critic)" if not cfg.policy.model.critic else ")"
        if cfg.env.reset_group_size > 1:
            where += f", groups of {cfg.env.reset_group_size}"
        if cfg.league.enabled:
            algo += " in a league"
        print(f"{name:<26} {where}; {algo}; {target}; {limit}")
    return 0


def _overrides(args: argparse.Namespace) -> list[str]:
    items = []
    for name, (key, _) in SHORTHANDS.items():
        value = getattr(args, name)
        if value is not None:
            items.append(f"{key}={value}")
    return items + list(args.overrides)


def _run_options(args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    """The run options (``RunOptions``' keywords) every training command takes, its
    overrides followed by ``extra`` ones."""
    if not args.config and not args.resume:
        named = [word for word in args.overrides if "=" not in word]
        hint = f" (did you mean: ding-lite {args.command} -c {named[0]}?)" if named else ""
        raise DingLiteError(f"{args.command} needs -c EXPERIMENT_OR_FILE or --resume EXP_DIR{hint}")
    return {
        "seed": args.seed,
        "overrides": _overrides(args) + list(extra),
        "exp_dir": args.exp_dir,
        "device": args.device,
        "max_train_iter": args.max_train_iter,
        "resume": args.resume,
        "import_modules": args.imports,
    }


def _serial(args: argparse.Namespace) -> int:
    from ding_lite.entry.pipelines.serial import serial_pipeline

    result = serial_pipeline(
        args.config, verbose=0 if args.quiet else 1, **_run_options(args)
    ).result
    _quiet_summary(args, result)
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
    from ding_lite.entry.pipelines.parallel import parallel_pipeline

    result = parallel_pipeline(
        args.config,
        learners=args.learners,
        collectors=args.collectors,
        launcher=args.launcher,
        ray_address=args.ray_address,
        verbose=0 if args.quiet else 1,
        **_run_options(args),
    )
    _quiet_summary(args, result)
    return exit_code(result["stop_reason"])


def _quiet_summary(args: argparse.Namespace, result: dict) -> None:
    """With ``-q`` the pipeline prints nothing; the command still ends on the summary's last
    line, ``run dir: <exp_dir>`` (the figures are in its result.json)."""
    if args.quiet:
        from ding_lite.entry.run.result import summary

        print(summary(result).splitlines()[-1], flush=True)


def _coordinator(args: argparse.Namespace) -> int:
    if args.supervised is not None:  # imports no torch: the process starts in a second
        from ding_lite.entry.pipelines.coordinator_process import run_supervised_coordinator

        if not args.resume or args.port is None:
            raise DingLiteError("--supervised needs --resume RUN_DIR and --port")
        _check_link_fd(args.supervised)
        return run_supervised_coordinator(
            args.resume, args.supervised, args.port, args.config, args.quiet
        )
    import_for("parallel")  # per role, the config is compiled as a parallel run's
    from ding_lite.entry.pipelines.parallel import compile_parallel_config, run_coordinator

    extra = [f"system.host={args.host}"] if args.host else []
    if args.port is not None:
        extra.append(f"system.coordinator_port={args.port}")
    cfg = compile_parallel_config(args.config, **_run_options(args, *extra))
    result = run_coordinator(cfg, progress=not args.quiet, resuming=bool(args.resume))
    _quiet_summary(args, result)
    return exit_code(result["stop_reason"])


def _check_link_fd(fd: int) -> None:
    """``--supervised FD`` must be a socket this process inherited (the supervisor's link).

    Raises:
        DingLiteError: anything else: a closed or unknown descriptor, a file, a pipe.
    """
    try:
        is_socket = stat.S_ISSOCK(os.fstat(fd).st_mode)
    except (OSError, OverflowError, ValueError):  # not open here, or not a descriptor at all
        is_socket = False
    if not is_socket:
        raise DingLiteError(
            f"--supervised {fd}: not a socket this process inherited (it is given by "
            "ding-lite parallel, which starts the coordinator)"
        )


def _status(args: argparse.Namespace) -> int:
    from ding_lite.entry.live.terminal import status_command

    if args.interval <= 0:
        raise DingLiteError(f"--interval must be positive, got {args.interval:g}")
    return status_command(args.run_path, args.watch, args.interval)


def _dashboard(args: argparse.Namespace) -> int:
    from ding_lite.entry.live.dashboard import dashboard_command

    return dashboard_command(
        args.run_paths, args.host, args.port, args.open_for, allowed_hosts=args.allow_host
    )


def _plot(args: argparse.Namespace) -> int:
    from ding_lite.entry.reporting.plot import plot_command

    return plot_command(
        args.run_paths,
        args.out,
        args.metric,
        args.x,
        args.band,
        args.size,
        args.title,
        hold_last=args.hold_last,
    )


def _league(args: argparse.Namespace) -> int:
    from ding_lite.entry.reporting.league_table import format_league, read_league_table

    if args.top < 1:
        raise DingLiteError(f"--top must be at least 1, got {args.top}")
    print(format_league(*read_league_table(args.run_path), top=args.top))
    return 0


def _tune(args: argparse.Namespace) -> int:
    from ding_lite.entry.tune.command import tune_command

    return tune_command(args)


def _worker(args: argparse.Namespace) -> int:
    from ding_lite.config.config import load_experiment
    from ding_lite.config.modules import named_env_modules
    from ding_lite.entry.pipelines.worker_process import run_worker

    # The only env modules a start task's config may name: this command line's.
    modules = list(args.imports)
    if args.config:  # a .py file registers its hooks and envs as it runs
        env = load_experiment(args.config).get("env")
        modules += named_env_modules(env if isinstance(env, dict) else {})

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
        env_modules=modules,
    )


def _flags(items: list[str]) -> list[str]:
    return [item for item in items if item.startswith("-")]


def _flag_hint(extra: list[str]) -> str:
    """What an unknown flag another library uses is called here (``--ent-coef``: SB3's
    ent_coef is policy.learn.entropy_weight, flag ``--entropy-coef``), or ""."""
    from ding_lite.config.foreign_names import foreign_hint

    for flag in _flags(extra):
        name = flag.lstrip("-").split("=", 1)[0].replace("-", "_")
        hint = foreign_hint(name)
        if hint:
            key = hint.split(" is ", 1)[1].split()[0]
            short = [f"--{n.replace('_', '-')}" for n, (k, _) in SHORTHANDS.items() if k == key]
            return hint + (f"; flag {short[0]}" if short else f"; pass {key}=VALUE")
    return ""


def _dispatch(args: argparse.Namespace) -> int:
    import_for(args.command)
    commands = {
        "list": _list,
        "serial": _serial,
        "eval": eval_command,
        "render": render_command,
        "export": export_command,
        "status": _status,
        "dashboard": _dashboard,
        "plot": _plot,
        "league": _league,
        "tune": _tune,
        "parallel": _parallel,
        "coordinator": _coordinator,
        "learner": _worker,
        "collector": _worker,
    }
    return commands[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # argparse fills a positional list only once: overrides given after a flag
    # (``serial -c EXP a.b=1 --seed 0 c.d=2``, ``eval RUN_DIR --episodes 9 a.b=1``) come
    # back here and join the subcommand's list (run dir and overrides, or overrides).
    listed = "paths" if getattr(args, "paths", None) is not None else "overrides"
    if extra and getattr(args, listed, None) is not None and not _flags(extra):
        setattr(args, listed, [*getattr(args, listed), *extra])
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}{_flag_hint(extra)}")
    if args.command is None:
        parser.print_help()
        return 2
    code = _run(args)
    if args.command in ("learner", "collector"):  # threads that may still be inside torch
        return exit_now_if_threads_linger(code)
    return code


def _run(args: argparse.Namespace) -> int:
    """The command's exit code; a known error or an interrupt is one line on stderr."""
    # SIGTERM unwinds like Ctrl-C: one line and exit 143, whether it lands in imports,
    # config compilation, env building or the run.
    try:
        with sigterm_interrupts():
            return _dispatch(args)
    except DiskFullError as err:
        print(f"ding-lite: error: {err}", file=sys.stderr)
        return exit_code("disk_full")
    except DingLiteError as err:
        print(f"ding-lite: error: {err}", file=sys.stderr)
        return getattr(err, "exit_code", 2)  # 2: a config or usage error, unless it says
    except RunInterrupted as stop:  # a run wrote its result.json first
        again = ""
        if stop.resume_dir is not None and args.command in ("serial", "parallel"):
            again = f"; resume with: ding-lite {args.command} --resume {stop.resume_dir}"
        print(f"ding-lite: interrupted ({stop.signal_name}){again}", file=sys.stderr)
        return exit_code("interrupted", stop.signal_name)
    except KeyboardInterrupt:
        print("ding-lite: interrupted (SIGINT)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # ``ding-lite list | head``: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (flush at exit)
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
