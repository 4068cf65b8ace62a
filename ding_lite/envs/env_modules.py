"""Which modules an env's config may bring into this process.

A user's own envs live in a module that registers them when imported: a gymnasium id
(``gymnasium.register``) or a ding_lite env (:func:`~ding_lite.envs.register_env`). A config
names such a module in ``env.import_modules`` or in gymnasium's ``module:Id`` form
(``env.name: gym:my_envs:CoinFlip-v0``). Importing a module runs its code, so a process
imports only the modules its own user allowed, with :func:`import_env_modules`: ``--import
MOD`` on the command line, a config the user gave (``-c``, overrides, a config passed to a
pipeline), or a call from Python. A config that merely arrives (a start task a coordinator
sends, a run dir's ``config.json``) names modules and nothing more: building its env with a
module that was not allowed is a one-line error (:func:`check_env_modules`), and the module
is not imported.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ding_lite.config.modules import gym_module, is_module_name
from ding_lite.utils.errors import ConfigError

_allowed: set[str] = set()
_lock = threading.Lock()


def import_env_modules(names: Iterable[str]) -> None:
    """Imports each module of ``names`` and allows envs to name it in this process.

    Call it only with modules the process's own user chose (its command line, its config,
    its code), never with names that came from a peer or a file.

    Raises:
        ConfigError: a name that is not a module's dotted name, or a module that cannot be
            imported (one line, naming it).
    """
    for name in names:
        if not is_module_name(name):
            raise ConfigError(f"env module {name!r}: not a module name (my_envs, pkg.envs)")
        with _lock:
            if name in _allowed:
                continue
            try:
                importlib.import_module(name)
            except ImportError as err:
                raise ConfigError(
                    f"cannot import env module '{name}' ({err}); it must be importable "
                    "(installed, or its folder on PYTHONPATH)"
                ) from None
            _allowed.add(name)


def allowed_env_modules() -> frozenset[str]:
    """The modules :func:`import_env_modules` imported in this process."""
    with _lock:
        return frozenset(_allowed)


def refused_message(names: Iterable[str], where: str) -> str | None:
    """The one-line error for the modules of ``names`` this process was not allowed to
    import (``where`` says which config key names them), or None when all were."""
    refused = [n for n in dict.fromkeys(names) if n not in allowed_env_modules()]
    if not refused:
        return None
    shown = ", ".join(repr(n) for n in refused)  # repr: no control character gets printed
    flags = " ".join(f"--import {n}" for n in refused)
    return (
        f"{where} names module {shown}, which this process was not allowed to import: "
        f"ding_lite imports only the modules its own command line or config names ({flags})"
    )


def check_env_modules(env: Mapping[str, Any]) -> None:
    """Refuses a config's ``env`` section that names a module this process did not allow.

    Raises:
        ConfigError: one line naming the modules and the ``--import`` flags that allow them.
    """
    message = refused_message(env.get("import_modules") or [], "env.import_modules")
    module = gym_module(env.get("name"))
    if message is None and module is not None:
        message = refused_message([module], f"env.name {env.get('name')!r}")
    if message is not None:
        raise ConfigError(message)
