"""The ``ding-lite`` command's arguments: every subcommand, flag and shorthand."""

from __future__ import annotations

import argparse
import os
import socket

from ding_lite import __version__

# Shorthand flag -> dotted config key.
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
    # The air-combat design's own flags (docs/aircombat.rst, "Train, evaluate, watch").
    "agent": ("policy.type", str),
    "opponent": ("env.kwargs.opponent", str),
    "reward": ("env.kwargs.reward", str),
    "max_steps": ("max_env_step", int),
}


def _add_import_arg(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help=f"a module of yours that registers envs, imported first (repeatable); {what}",
    )


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
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress output; prints only the run dir"
    )
    _add_import_arg(parser, "it joins env.import_modules; needed again with --resume")
    group = parser.add_argument_group("shorthands (each sets one config key)")
    for name, (key, typ) in SHORTHANDS.items():
        group.add_argument(f"--{name.replace('_', '-')}", type=typ, dest=name, help=f"sets {key}")
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="key.sub=value",
        help="dotted config overrides, checked against the defaults",
    )


def _add_trained_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c", "--config", help="the experiment it was trained on (default: the run's config.json)"
    )
    parser.add_argument(
        "--ckpt",
        help="checkpoint file, or the newest checkpoint of a ckpt/ folder or run dir",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="[RUN_DIR] [key.sub=value ...]",
        help="a run dir (its config.json and ckpt/best.pt), then dotted config overrides",
    )
    _add_import_arg(parser, "a run dir's config.json imports nothing by itself")


def _add_tune_parser(sub: argparse._SubParsersAction) -> None:
    """``ding-lite tune``: an Optuna study over the experiment's settings (docs/tune.rst)."""
    tune = sub.add_parser(
        "tune", help="tune an experiment's settings with Optuna; writes the best as best.py"
    )
    tune.add_argument("-c", "--config", help="bundled experiment or a .py/.yaml file")
    tune.add_argument("--trials", type=int, default=20, help="trials to run (default 20)")
    tune.add_argument(
        "--jobs", type=int, default=1, help="worker processes sharing the study (default 1)"
    )
    tune.add_argument("--study", help="study name (default <exp_name>_tune); joins it if it exists")
    tune.add_argument(
        "--storage",
        help="Optuna storage: sqlite:///PATH, journal:PATH, or a database URL "
        "(default: sqlite in the study's folder)",
    )
    tune.add_argument(
        "--sampler", choices=("tpe", "random"), default="tpe", help="Optuna sampler (default tpe)"
    )
    tune.add_argument(
        "--pruner",
        choices=("median", "hyperband", "none"),
        default="median",
        help="stops trials whose evaluations fall behind (default median)",
    )
    tune.add_argument(
        "--objective",
        choices=("final", "best", "steps_to_target"),
        help="what a trial scores (default: steps_to_target if the experiment has a "
        "stop_value, else final)",
    )
    tune.add_argument(
        "--seeds", default="2", help="seeds per trial: a count (default 2) or a list 11,12,13"
    )
    tune.add_argument("--space", help="search space file (.yaml, .json or .py)")
    tune.add_argument(
        "--max-env-step", type=int, help="each seed's budget (default: the experiment's)"
    )
    tune.add_argument("--out", help="folder of studies (default ./tune)")
    tune.add_argument(
        "--pipeline",
        choices=("serial", "parallel"),
        default="serial",
        help="the pipeline each trial trains in (default serial)",
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
    evaluate = sub.add_parser(
        "eval", help="evaluate a run's best checkpoint (the experiment's eval episodes)"
    )
    _add_trained_args(evaluate)
    evaluate.add_argument("--episodes", type=int, default=100, help="episodes (default 100)")
    evaluate.add_argument("--seed", type=int, help="seed of the eval env")
    evaluate.add_argument("--device", help="cpu, cuda, cuda:N or auto")
    evaluate.add_argument(
        "--against",
        metavar="SPEC",
        help="two-sided envs: the opponent, a run dir or checkpoint, member:NAME of the run's "
        "league, or a scripted agent (docs/league.rst)",
    )
    evaluate.add_argument(
        "--cross",
        nargs="+",
        metavar="RUN_DIR",
        help="two-sided envs: every run's best.pt against every run's, as a matrix",
    )
    render = sub.add_parser(
        "render",
        help="a video (.mp4, .gif) of a checkpoint's policy, or an air-combat episode as a PNG",
    )
    _add_trained_args(render)
    render.add_argument(
        "--out",
        default="match.png",
        help="the suffix chooses: .mp4 or .gif, a video of any env that draws; .png, an "
        "air-combat picture (default match.png)",
    )
    render.add_argument("--episodes", type=int, help="episodes in a video (default 1)")
    render.add_argument(
        "--seed", type=int, default=0, help="seed of the (first) episode (default 0)"
    )
    render.add_argument("--opponent", help="P2's agent (default: the experiment's opponent)")
    export = sub.add_parser(
        "export",
        help="a checkpoint's policy as an ONNX or TorchScript file, normalization folded in",
    )
    export.add_argument(
        "run_path", metavar="RUN_DIR", help="a run dir, its ckpt/ folder or a .pt checkpoint"
    )
    export.add_argument(
        "--format",
        choices=("onnx", "torchscript"),
        default="onnx",
        help="the file's format (default onnx; onnx needs pip install 'ding-lite[export]')",
    )
    export.add_argument(
        "--out", help="the file to write (default policy.onnx, or policy.pt for torchscript)"
    )
    export.add_argument(
        "--sampling",
        action="store_true",
        help="the sampling policy (its noise an extra input) instead of the deterministic one",
    )
    status = sub.add_parser("status", help="show a run's live status (its status.json)")
    status.add_argument("run_path", metavar="RUN_DIR", help="the run's experiment dir")
    status.add_argument(
        "-w", "--watch", action="store_true", help="redraw until the run ends (Ctrl-C stops)"
    )
    status.add_argument(
        "--interval", type=float, default=2.0, help="seconds between redraws (default 2)"
    )
    dashboard = sub.add_parser(
        "dashboard", help="serve a live web page of runs: status, workers, ledger, curves"
    )
    dashboard.add_argument("run_paths", nargs="+", metavar="RUN_DIR", help="experiment dirs")
    dashboard.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    dashboard.add_argument(
        "--port", type=int, default=0, help="port (default 0: a free one, printed)"
    )
    dashboard.add_argument(
        "--open-for",
        type=float,
        metavar="S",
        help="stop serving after S seconds (default: until Ctrl-C)",
    )
    dashboard.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host header is NAME (a name the machine is reached "
        "by that is not its own host name: a proxy's, a DNS alias); repeatable",
    )
    plot = sub.add_parser(
        "plot", help="learning curves of runs (mean and band over seeds) to an image"
    )
    plot.add_argument("run_paths", nargs="+", metavar="RUN_DIR", help="experiment dirs")
    plot.add_argument("--out", default="curves.png", help="image to write (default curves.png)")
    plot.add_argument(
        "--metric",
        action="append",
        metavar="TAG",
        help="tensorboard tag to plot, repeatable or comma-separated (default charts/eval_return)",
    )
    plot.add_argument(
        "--x", choices=("envstep", "wall"), default="envstep", help="x axis (default envstep)"
    )
    plot.add_argument(
        "--band",
        choices=("minmax", "ci"),
        default="minmax",
        help="band over a group's runs: min-max or 95%% t-interval of the mean (default minmax)",
    )
    plot.add_argument("--size", default="960x600", help="WIDTHxHEIGHT in pixels (default 960x600)")
    plot.add_argument("--title", help="title of the figure")
    plot.add_argument(
        "--hold-last",
        action="store_true",
        help="carry each run at its last value to the end of its group's longest run "
        "(a run that stopped when it solved)",
    )
    _add_tune_parser(sub)
    league = sub.add_parser(
        "league", help="a league run's members, ratings and win-rate matrix (league/table.json)"
    )
    league.add_argument("run_path", metavar="RUN_DIR", help="the run's experiment dir")
    league.add_argument(
        "--top", type=int, default=8, help="members in the win-rate matrix (default 8)"
    )
    coordinator = sub.add_parser("coordinator", help="serve the coordinator for remote workers")
    _add_run_args(coordinator)
    coordinator.add_argument("--host", help="address to bind (default 127.0.0.1)")
    coordinator.add_argument(
        "--port",
        type=int,
        help="port to bind (default: a free one; with --resume, the port the run's "
        "coordinator served on, so its workers find the new one)",
    )
    coordinator.add_argument(
        "--supervised",
        type=int,
        metavar="FD",
        help="internal: run as the child of ding-lite parallel, linked to it by this inherited "
        "socket (with --resume RUN_DIR and --port)",
    )
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
        _add_import_arg(worker, "the only modules a start task's config may name")
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
