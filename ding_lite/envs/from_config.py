"""Building the env a resolved config names."""

from __future__ import annotations

from typing import Any

import torch

from ding_lite.envs import create_env
from ding_lite.envs.base import TensorVectorEnv
from ding_lite.utils.errors import ConfigError


def build_env(
    cfg: Any, num_envs: int, device: Any, seed: int, *, evaluation: bool = False
) -> TensorVectorEnv:
    """Creates ``cfg.env.name`` with ``cfg.env.kwargs`` and ``cfg.env.vector_mode``; a bad
    name or argument, or a missing dependency of the env, is a ConfigError.

    Args:
        cfg: a resolved config (its ``env`` section is read).
        num_envs: env copies.
        device: where the env's tensors live.
        seed: seed of the first reset.
        evaluation: an evaluation env: ``cfg.evaluator.env_kwargs`` override
            ``cfg.env.kwargs`` (e.g. a self-play run evaluated against a scripted opponent).
    """
    kwargs = dict(cfg.env.kwargs)
    if evaluation:
        kwargs.update(cfg.get("evaluator", {}).get("env_kwargs", {}))
    if isinstance(kwargs.get("dtype"), str):
        # Configs are JSON/YAML: "float64" names torch.float64.
        dtype = getattr(torch, kwargs["dtype"], None)
        if not isinstance(dtype, torch.dtype):
            raise ConfigError(f"env.kwargs.dtype: unknown torch dtype '{kwargs['dtype']}'")
        kwargs["dtype"] = dtype
    try:
        return create_env(
            cfg.env.name,
            num_envs,
            device=device,
            seed=seed,
            vector_mode=cfg.env.get("vector_mode", "sync"),
            **kwargs,
        )
    except (KeyError, ValueError, TypeError, ImportError) as err:
        message = err.args[0] if err.args else str(err)
        raise ConfigError(str(message)) from None
