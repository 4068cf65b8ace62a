"""The options of a run, beside its config: written once for both pipelines.

``serial_pipeline(cfg, **options)``, ``parallel_pipeline(cfg, **options)`` and the command
line take the same keywords (:class:`RunOptions`); :func:`compile_run_config` turns a config
and its options into the run's resolved config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from easydict import EasyDict

from ding_lite.config.config import compile_config
from ding_lite.config.modules import is_module_name, named_env_modules
from ding_lite.entry.run.dir_lock import ensure_free
from ding_lite.entry.run.saved_config import resume_config
from ding_lite.utils.errors import ConfigError

# Options that only a parallel run has (each sets one ``system`` key).
PARALLEL_ONLY = ("learners", "collectors", "launcher", "ray_address")


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What a run is asked beside its config; each option overrides config keys.

    Attributes:
        seed: overrides ``cfg.seed``.
        max_env_step: stop after this many env steps (``max_env_step``).
        max_train_iter: stop after this many iterations (``max_train_iter``).
        overrides: dotted ``key.sub=value`` overrides, or a nested dict merged into the config.
        exp_dir: where the run writes (default ``./<exp_name>``, or ``./<exp_name>_N`` when
            that holds a run).
        device: "cpu", "cuda", "cuda:N" or "auto".
        resume: an experiment dir to continue: its saved config and newest checkpoint
            (``overrides`` still apply, e.g. a new limit). A config given beside it only
            registers what its file defines (hooks, envs); its settings must equal the
            saved ones.
        learners: parallel only: ranks of the data-parallel learner (``system.learners``).
        collectors: parallel only: collector workers (``system.collectors``).
        launcher: parallel only: "local" (child processes) or "ray" (``system.launcher``).
        ray_address: parallel only: the Ray cluster to join (``system.ray_address``;
            default: a local Ray instance for the run).
        import_modules: modules that register the run's envs (``--import MOD``); they join
            ``env.import_modules``. Resuming, every module the run's config.json names must
            be listed here: a run dir's files never make ding_lite import code.
    """

    seed: int | None = None
    max_env_step: int | None = None
    max_train_iter: int | None = None
    overrides: Iterable[str] | Mapping = ()
    exp_dir: str | Path | None = None
    device: str | None = None
    resume: str | Path | None = None
    learners: int | None = None
    collectors: int | None = None
    launcher: str | None = None
    ray_address: str | None = None
    import_modules: Iterable[str] = ()

    @classmethod
    def of_call(
        cls, caller: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, parallel: bool
    ) -> RunOptions:
        """The options a pipeline was called with: the config positional, the rest by keyword.

        Raises:
            TypeError: a positional argument after the config, an unknown keyword, or a
                parallel-only option given to a serial run; the message names the keywords
                the call takes.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        if not parallel:
            names = [n for n in names if n not in PARALLEL_ONLY]
        if args:
            raise TypeError(
                f"{caller}() takes the config as its only positional argument; pass the "
                f"rest by keyword (e.g. {caller}(cfg, seed=0, max_env_step=100_000)). "
                f"Keywords: {', '.join(names)}"
            )
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            hint = " (parallel_pipeline only)" if set(unknown) <= set(PARALLEL_ONLY) else ""
            raise TypeError(
                f"{caller}() got an unexpected keyword argument {', '.join(unknown)}{hint}; "
                f"it takes: {', '.join(names)}"
            )
        return cls(**kwargs)


def compile_run_config(cfg: str | Mapping | None, options: RunOptions) -> EasyDict:
    """The run's resolved config: ``cfg`` (or, resuming, the run's saved config) with the
    options applied. The run dir is chosen later, when the run claims it.

    Raises:
        ConfigError: no config and no resume, a bad key or value, an estimator that does not
            fit the rest of the config, or a live run holds the dir to resume.
    """
    exp_dir = options.exp_dir
    if options.resume is not None:
        cfg = resume_config(options.resume, cfg)
        ensure_free(options.resume)
        exp_dir = options.resume
    elif cfg is None:
        raise ConfigError("a run needs a config (or resume=EXP_DIR)")
    overrides = options.overrides
    if not isinstance(overrides, Mapping):
        overrides = list(overrides)
        for name in PARALLEL_ONLY:
            value = getattr(options, name)
            if value is not None:
                overrides.append(f"system.{name}={value}")
    resolved = compile_config(
        cfg,
        overrides,
        seed=options.seed,
        exp_dir=None if exp_dir is None else str(exp_dir),
        device=options.device,
        max_env_step=options.max_env_step,
        max_train_iter=options.max_train_iter,
    )
    for name in _imports(options):
        if name not in resolved.env.import_modules:
            resolved.env.import_modules.append(name)
    from ding_lite.envs.reward_fns import build_reward_fn  # torch: only for a run
    from ding_lite.policy.ppo import check_update_config

    check_update_config(resolved)
    if not named_env_modules(resolved.env):  # else a module may register it: see import_run_modules
        build_reward_fn(resolved.env.reward_fn, resolved.env.reward_fn_kwargs)  # a known name
    return resolved


def import_run_modules(cfg: EasyDict, options: RunOptions) -> None:
    """Imports the modules that register a run's envs, reward functions and scripted
    teachers (:func:`run_env_modules`), then checks the reward function and the scripted
    kickstarting teacher the run names.

    Raises:
        ConfigError: a module that cannot be imported (or is not given again on a resume),
            an unknown reward function or bad arguments for it, or a scripted teacher
            (``agent:NAME``) the env does not have.
    """
    from ding_lite.envs.env_modules import import_env_modules
    from ding_lite.envs.reward_fns import build_reward_fn
    from ding_lite.envs.teachers import check_teacher

    import_env_modules(run_env_modules(cfg, options))
    build_reward_fn(cfg.env.reward_fn, cfg.env.reward_fn_kwargs)
    check_teacher(cfg.env.name, cfg.policy.learn.kickstart.teacher)


def run_env_modules(cfg: EasyDict, options: RunOptions) -> list[str]:
    """The modules that register a run's envs (``env.import_modules``, the module of a
    ``gym:module:Id`` name), for the run's processes to import.

    A new run's config is its caller's own, so the modules it names are the caller's
    choice. A resumed run's config comes from its run dir, whose files never make ding_lite
    import code: each module it names must be given again in ``options.import_modules``.

    Raises:
        ConfigError: resuming, a module named by the saved config and not given again.
    """
    named = named_env_modules(cfg.env)
    missing = [m for m in named if m not in _imports(options)]
    if options.resume is not None and missing:
        flags = " ".join(f"--import {m}" for m in missing if is_module_name(m))
        raise ConfigError(
            f"--resume {options.resume}: its config.json names env module(s) "
            f"{', '.join(map(repr, missing))}, and ding_lite imports no module a run dir "
            f"names: pass {flags or '--import MODULE'} (import_modules= from Python) to "
            "import them"
        )
    return named


def _imports(options: RunOptions) -> list[str]:
    """``options.import_modules``, checked: module names only.

    Raises:
        ConfigError: a string instead of a list, or an entry that is not a module name.
    """
    names = options.import_modules
    if isinstance(names, str):
        raise ConfigError(f"import_modules must be a list of module names, got {names!r}")
    for name in names:
        if not is_module_name(name):
            raise ConfigError(f"--import {name!r}: not a module name (my_envs, pkg.envs)")
    return list(names)
