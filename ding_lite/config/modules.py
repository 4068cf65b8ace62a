"""The modules a config names: ``env.import_modules`` and gymnasium's ``module:Id`` form
(``env.name: gym:my_envs:CoinFlip-v0``).

Naming is all a config does: which of them a process imports is decided by its own user
(:mod:`ding_lite.envs.env_modules`). Torch-free, for the coordinator and the launchers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GYM_PREFIX = "gym:"


def is_module_name(value: object) -> bool:
    """A Python module's absolute dotted name (``my_envs``, ``pkg.envs``): nothing that
    could name a file or a relative import."""
    return isinstance(value, str) and all(part.isidentifier() for part in value.split("."))


def gym_module(env_name: Any) -> str | None:
    """The module of gymnasium's ``module:Id`` form in ``gym:module:Id``, else None."""
    if not isinstance(env_name, str) or not env_name.startswith(GYM_PREFIX):
        return None
    module, sep, _ = env_name[len(GYM_PREFIX) :].rpartition(":")
    return module if sep else None


def named_env_modules(env: Mapping[str, Any]) -> list[str]:
    """The modules a config's ``env`` section names: ``import_modules``, then the module of
    a ``gym:module:Id`` name; each once, in that order. Missing keys name nothing; a value
    that is not a list is one name (the importer checks names)."""
    listed = env.get("import_modules") or []
    names = list(listed) if isinstance(listed, list | tuple) else [listed]
    module = gym_module(env.get("name"))
    if module is not None:
        names.append(module)
    return [name for i, name in enumerate(names) if name not in names[:i]]
