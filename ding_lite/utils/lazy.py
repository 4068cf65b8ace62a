"""Package names that load on first use (PEP 562), so importing a package stays cheap: the
command line's ``--help`` must not pay for importing torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: imports ``exports[name]`` (a module) on the
    first look-up of ``name`` and keeps the value in ``namespace`` (the package's globals), so
    later look-ups skip the function.

    Raises (from the returned function):
        AttributeError: ``name`` is none of ``exports``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
