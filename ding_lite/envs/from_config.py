"""Building the env a resolved config names."""

from __future__ import annotations

from typing import Any

import torch

from ding_lite.envs import create_env
from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.env_modules import check_env_modules
from ding_lite.utils.errors import ConfigError


def build_env(
    cfg: Any,
    num_envs: int,
    device: Any,
    seed: int,
    *,
    evaluation: bool = False,
    render: bool = False,
) -> TensorVectorEnv:
    """Creates ``cfg.env.name`` with ``cfg.env.kwargs`` and ``cfg.env.vector_mode``; a bad
    name or argument, or a missing dependency of the env, is a ConfigError.

    The modules the env section names (``env.import_modules``, a ``gym:module:Id`` name)
    must have been imported with :func:`~ding_lite.envs.env_modules.import_env_modules`
    by whoever owns this process: a config, which may have come from a peer or a run dir,
    never makes it import one (:mod:`ding_lite.envs.env_modules`).

    ``env.reset_group_size`` K above 1 is passed as the env's ``reset_group_size`` argument
    (1 passes nothing, so envs that do not know it build as before), except to an
    evaluation env: evaluation wants independent episodes.

    Args:
        cfg: a resolved config (its ``env`` section is read).
        num_envs: env copies.
        device: where the env's tensors live.
        seed: seed of the first reset.
        evaluation: an evaluation env: ``cfg.evaluator.env_kwargs`` override
            ``cfg.env.kwargs`` (e.g. a self-play run evaluated against a scripted opponent).
        render: the env must draw frames (videos); so must an evaluation env when
            ``evaluator.video_freq`` is set. A ``gym:<id>`` env is then built with
            ``render_mode="rgb_array"`` (bundled envs always draw).
    """
    check_env_modules(cfg.env)
    kwargs = dict(cfg.env.kwargs)
    if "reset_group_size" in kwargs:  # the collector reads the env section's key
        raise ConfigError("env.kwargs.reset_group_size: set env.reset_group_size instead")
    group_size = 1 if evaluation else cfg.env.reset_group_size
    if group_size > 1:
        kwargs["reset_group_size"] = group_size
    if evaluation:
        kwargs.update(cfg.evaluator.env_kwargs)
        render = render or cfg.evaluator.video_freq > 0
    if render and cfg.env.name.startswith("gym:"):
        kwargs.setdefault("render_mode", "rgb_array")
    if isinstance(kwargs.get("dtype"), str):
        # Configs are JSON/YAML: "float64" names torch.float64.
        dtype = getattr(torch, kwargs["dtype"], None)
        if not isinstance(dtype, torch.dtype):
            raise ConfigError(f"env.kwargs.dtype: unknown torch dtype '{kwargs['dtype']}'")
        kwargs["dtype"] = dtype
    try:
        env = create_env(
            cfg.env.name,
            num_envs,
            device=device,
            seed=seed,
            vector_mode=cfg.env.vector_mode,
            **kwargs,
        )
    except (KeyError, ValueError, TypeError, ImportError) as err:
        message = str(err.args[0] if err.args else err)
        if group_size > 1 and isinstance(err, TypeError) and "reset_group_size" in message:
            raise _no_reset_groups(cfg.env.name, group_size, "takes no such argument") from None
        raise ConfigError(message) from None
    if group_size > 1 and getattr(env, "reset_group_size", 1) != group_size:
        env.close()  # it took the argument (e.g. as **kwargs) but does not group
        raise _no_reset_groups(cfg.env.name, group_size, "ignores the argument")
    return env


def _no_reset_groups(name: str, group_size: int, why: str) -> ConfigError:
    """The one-line error for an env without reset groups (``why``: how it showed)."""
    return ConfigError(
        f"env.reset_group_size={group_size}: env '{name}' does not support reset groups "
        f"(it {why}); set env.reset_group_size=1 or use an env that does"
    )
