"""``ding-lite tune -c EXP``: checks the request, creates or joins the study, runs the
trials on ``--jobs`` processes, then writes ``best.py`` and the plots (docs/tune.rst)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import ConfigError, DingLiteError

DEFAULT_OUT = "tune"
TUNE_SEED_BASE = 7000  # ``--seeds K`` trains seeds 7000..7000+K-1, far from checks' 0-999


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"3"`` -> three seeds from :data:`TUNE_SEED_BASE`; ``"11,12,13"`` -> those.

    Raises:
        DingLiteError: not a positive count or a comma-separated list of distinct integers.
    """
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if not numbers or (len(numbers) == 1 and "," not in str(text) and numbers[0] < 1):
        raise DingLiteError(f"--seeds {text}: give a count (3) or a list of seeds (11,12,13)")
    if len(numbers) == 1 and "," not in str(text):
        return tuple(range(TUNE_SEED_BASE, TUNE_SEED_BASE + numbers[0]))
    if len(set(numbers)) != len(numbers):
        raise DingLiteError(f"--seeds {text}: a seed is listed twice")
    return tuple(numbers)


def _experiment(name_or_file: str | None) -> str:
    if not name_or_file:
        raise DingLiteError("tune needs -c EXPERIMENT_OR_FILE (ding-lite list shows them)")
    path = Path(name_or_file)
    if path.suffix in (".py", ".yaml", ".yml", ".json"):
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        return str(path.resolve())  # the workers may run elsewhere
    return name_or_file


def build_setup(args: argparse.Namespace) -> Any:
    """The study's :class:`~ding_lite.entry.tune.trial.TuneSetup` from the command line.

    Raises:
        DingLiteError: a bad option, experiment, space file or objective (one line).
    """
    from ding_lite.config.config import compile_config
    from ding_lite.entry.tune.space import check_space, default_space, load_space
    from ding_lite.entry.tune.trial import TuneSetup

    if args.jobs < 1:
        raise DingLiteError(f"--jobs must be at least 1, got {args.jobs}")
    if args.trials < 1:
        raise DingLiteError(f"--trials must be at least 1, got {args.trials}")
    experiment = _experiment(args.config)
    cfg = compile_config(experiment)
    budget = args.max_env_step or cfg.max_env_step
    if not budget or budget < 1:
        raise DingLiteError(f"{cfg.exp_name} has no max_env_step: pass --max-env-step N")
    target = cfg.evaluator.stop_value
    objective = args.objective or ("final" if target is None else "steps_to_target")
    if objective == "steps_to_target" and target is None:
        raise DingLiteError(
            f"--objective steps_to_target needs a target, and {cfg.exp_name} has no "
            "evaluator.stop_value; use --objective final or best"
        )
    if args.space:
        space = load_space(args.space)
    else:
        from ding_lite.envs.from_config import build_env
        from ding_lite.utils.device import resolve_device

        env = build_env(cfg, 1, resolve_device("cpu"), 0)
        space = default_space(env.action_space.kind)
    check_space(experiment, space)
    study_name = args.study or f"{cfg.exp_name}_tune"
    if "/" in study_name or study_name in ("", ".", ".."):
        raise DingLiteError(f"--study {study_name!r}: a name, not a path")
    study_dir = (Path(args.out or DEFAULT_OUT) / study_name).resolve()
    from ding_lite.entry.tune.study import default_storage

    return TuneSetup(
        experiment=experiment,
        exp_name=cfg.exp_name,
        study_name=study_name,
        storage=args.storage or default_storage(study_dir),
        study_dir=str(study_dir),
        space=space,
        objective=objective,
        seeds=parse_seeds(args.seeds),
        max_env_step=int(budget),
        num_envs=cfg.env.num_envs,
        n_steps=cfg.policy.collect.n_steps,
        eval_freq=max(1, cfg.evaluator.eval_freq),
        sampler=args.sampler,
        pruner=args.pruner,
        pipeline=args.pipeline,
    )


def tune_command(args: argparse.Namespace) -> int:
    """Runs ``ding-lite tune``; returns the exit code (0: the trials ran)."""
    from ding_lite.entry.tune.study import (
        StudyKey,
        create_or_join,
        import_optuna,
        make_pruner,
        make_sampler,
        open_storage,
    )

    import_optuna()  # first: without it nothing else is worth checking
    setup = build_setup(args)
    study_dir = Path(setup.study_dir)
    study_dir.mkdir(parents=True, exist_ok=True)
    storage = open_storage(setup.storage)
    key = StudyKey(setup.experiment, setup.objective, setup.max_env_step, setup.seeds)
    study = create_or_join(
        setup.study_name,
        storage,
        setup.direction,
        key,
        make_sampler(setup.sampler),
        make_pruner(setup.pruner, setup.max_step, setup.grid),
    )
    started = len(study.get_trials(deepcopy=False))
    joined = f", joining {started} trials" if started else ""
    print(
        f"study {setup.study_name} ({setup.objective}, {setup.direction}; {len(setup.seeds)} "
        f"seed(s) x {setup.max_env_step:,} env steps){joined}: {args.trials} trials on "
        f"{args.jobs} process(es), storage {setup.storage}, folder {study_dir}",
        flush=True,
    )
    from ding_lite.entry.tune.workers import run_jobs

    try:
        run_jobs(setup, args.jobs, args.trials, study_dir)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM, every worker ended
        _finish(study, setup, started)  # the best so far: Ctrl-C ends a study early
        raise
    _finish(study, setup, started)
    return 0


def _finish(study: Any, setup: Any, started: int) -> None:
    """Prints the summary, draws the plots and writes ``best.py`` with its path."""
    from ding_lite.entry.tune.outputs import summary_lines, write_best, write_plots

    for line in [*summary_lines(study, started), *write_plots(study, Path(setup.study_dir))]:
        print(line, flush=True)
    best = write_best(study, setup)
    if best is not None:
        print(f"best settings: {best} (run: ding-lite serial -c {best})", flush=True)
