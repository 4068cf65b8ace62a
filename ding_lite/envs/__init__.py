"""Batched tensor environments and the registry that builds them by name.

``create_env("cartpole", 64)`` builds a bundled env; ``create_env("gym:Acrobot-v1", 8)`` wraps
any registered gymnasium env (needs the optional ``gymnasium`` dependency), stepping its copies
in this process or, with ``vector_mode="async"``, in subprocesses. Other packages add envs
with :func:`register_env`. ``two_agent_meet`` is a tiny 2-agent env (``num_agents = 2``,
see :class:`~ding_lite.envs.base.TensorVectorEnv` for the agent axis), and
``create_env("aircombat", N, opponent="self")`` is air-combat self-play; ``matrix_game`` is
a symmetric zero-sum matrix game of one move (the league's proving ground); ``grid`` is
a multi-agent grid world with egocentric windows (``[C, H, W]`` observations).

A user's own env module (one that registers envs when imported) is imported with
:func:`import_env_modules`; an env name never imports one by itself
(:mod:`ding_lite.envs.env_modules`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from ding_lite.config.modules import GYM_PREFIX
from ding_lite.envs.aircombat import AirCombatEnv
from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.cartpole import CartPoleEnv
from ding_lite.envs.env_modules import import_env_modules
from ding_lite.envs.grid import GridEnv
from ding_lite.envs.gym_adapter import VECTOR_MODES, GymVectorEnv
from ding_lite.envs.matrix_game import MatrixGameEnv
from ding_lite.envs.pendulum import PendulumEnv
from ding_lite.envs.reward_fns import REWARD_FN_REGISTRY, register_reward_fn
from ding_lite.envs.spaces import ActionSpace, Box, Discrete, Hybrid, MultiDiscrete
from ding_lite.envs.two_agent_meet import TwoAgentMeetEnv
from ding_lite.utils.registry import Registry, RegistryError

__all__ = [
    "ActionSpace",
    "AirCombatEnv",
    "Box",
    "CartPoleEnv",
    "Discrete",
    "ENV_REGISTRY",
    "GridEnv",
    "Hybrid",
    "MultiDiscrete",
    "PendulumEnv",
    "REWARD_FN_REGISTRY",
    "TensorVectorEnv",
    "MatrixGameEnv",
    "TwoAgentMeetEnv",
    "VECTOR_MODES",
    "create_env",
    "import_env_modules",
    "list_envs",
    "register_env",
    "register_reward_fn",
]

EnvFactory = Callable[..., TensorVectorEnv]


def _not_reserved(name: str) -> None:
    if name.startswith(GYM_PREFIX):
        raise RegistryError(f"env names starting with '{GYM_PREFIX}' are reserved for gymnasium")


#: Env name -> the class (or factory) :func:`create_env` builds.
ENV_REGISTRY: Registry[EnvFactory] = Registry(
    "env", extra_known=(f"{GYM_PREFIX}<id>",), check_name=_not_reserved
)


def register_env(name: str, cls: EnvFactory | None = None, *, force: bool = False) -> Any:
    """Makes ``create_env(name, ...)`` build ``cls``; without ``cls``, a class decorator.

    Args:
        name: Registry name, e.g. ``"aircombat"``. Must not start with ``"gym:"``, which is
            reserved for the gymnasium adapter.
        cls: A ``TensorVectorEnv`` subclass or any callable taking keyword arguments
            ``num_envs``, ``device``, ``seed`` and the env's own options.
        force: Replace an env already registered under ``name`` instead of raising.

    Returns:
        ``cls`` (or the decorator).

    Raises:
        RegistryError: The name is taken (without ``force``) or reserved; a ``ValueError``,
            ``KeyError`` and ``ConfigError``.
    """
    return ENV_REGISTRY.register(name, cls, force=force)


def list_envs() -> list[str]:
    """Returns the registered env names in registration order.

    ``"gym:<id>"`` names are also accepted by :func:`create_env` but not listed.
    """
    return ENV_REGISTRY.names()


def create_env(
    name: str,
    num_envs: int,
    device: str | torch.device = "cpu",
    seed: int = 0,
    *,
    vector_mode: str = "sync",
    **kwargs: Any,
) -> TensorVectorEnv:
    """Builds ``num_envs`` copies of the env called ``name``.

    Args:
        name: A registered name (see :func:`list_envs`) or ``"gym:<id>"`` for a gymnasium env
            (``"gym:module:Id"`` once ``module`` was imported with :func:`import_env_modules`).
        num_envs: Number of copies ``N`` stepped together.
        device: Device of the env's tensors.
        seed: Seed used by the env's first ``reset()`` called without a seed.
        vector_mode: One of :data:`VECTOR_MODES`. ``"async"`` steps a ``gym:<id>`` env's
            copies in subprocesses; bundled envs step all copies as one tensor batch, so
            they take only ``"sync"``.
        **kwargs: Options of that env, e.g. ``max_episode_steps`` or ``dtype``.

    Returns:
        The env, ready for ``reset()``.

    Raises:
        RegistryError: Unknown env name (a ``ValueError`` and a ``KeyError``).
        ValueError: Unknown vector mode, or ``"async"`` for a non-gymnasium env.
        TypeError: An option the env does not accept.
        ImportError: ``gym:<id>`` without gymnasium, or without a dependency of that env.
        ValueError: ``gym:module:Id`` whose module was not imported with
            :func:`import_env_modules` (nothing is imported).
    """
    if vector_mode not in VECTOR_MODES:
        known = ", ".join(repr(m) for m in VECTOR_MODES)
        raise ValueError(f"unknown vector_mode {vector_mode!r}; known: {known}")
    if name.startswith(GYM_PREFIX):
        from ding_lite.envs.mujoco_log import route_mujoco_warnings

        # Not into MUJOCO_LOG.TXT in the cwd. Given the id alone: a "module:Id" name's
        # module is the adapter's to check, never gymnasium's to import.
        route_mujoco_warnings(name.rpartition(":")[2])

        return GymVectorEnv(
            name[len(GYM_PREFIX) :],
            num_envs=num_envs,
            device=device,
            seed=seed,
            vector_mode=vector_mode,
            **kwargs,
        )
    factory = ENV_REGISTRY.get(name)
    if vector_mode != "sync":
        raise ValueError(
            f"vector_mode {vector_mode!r} applies to gym:<id> envs only; '{name}' steps all "
            "its copies as one tensor batch (use vector_mode 'sync')"
        )
    _check_kwargs(name, factory, kwargs)
    return factory(num_envs=num_envs, device=device, seed=seed, **kwargs)


def _check_kwargs(name: str, factory: EnvFactory, kwargs: dict[str, Any]) -> None:
    """Rejects options ``factory`` does not take, listing the ones it does."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = [
        p
        for p in params
        if p not in ("self", "num_envs", "device", "seed")
        and params[p].kind
        in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"env '{name}' got unknown option(s) {', '.join(unknown)}; "
            f"it accepts: {', '.join(accepted) or 'none'}"
        )


register_env(CartPoleEnv.name, CartPoleEnv)
register_env(PendulumEnv.name, PendulumEnv)
register_env(AirCombatEnv.name, AirCombatEnv)
register_env(TwoAgentMeetEnv.name, TwoAgentMeetEnv)
register_env(MatrixGameEnv.name, MatrixGameEnv)
register_env(GridEnv.name, GridEnv)
