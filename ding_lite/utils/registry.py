"""A name -> object registry with helpful lookup errors: every ding_lite registry is one.

Policies, learner hooks, envs, air-combat agents and advantage estimators are all kept in a
:class:`Registry`, so they register the same way (``register(name, obj)`` or as a
decorator, ``force=True`` to replace) and fail the same way (:class:`RegistryError`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from ding_lite.utils.errors import ConfigError

T = TypeVar("T")


def suggest(name: str, known: list[str]) -> str:
    """Returns " (did you mean 'x'?)" for the closest known name, or "" when none is close."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class RegistryError(KeyError, ConfigError):
    """An unknown name, or a name registered twice without ``force``.

    A ``KeyError`` (what a lookup by name raises) and a
    :class:`~ding_lite.utils.errors.ConfigError` (the CLI prints it as one line and exits 2;
    it is also a ``ValueError``), so callers catching any of these keep working.
    """

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument, quotes and escapes included.
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Maps names to objects (classes, functions) registered by the library or by users.

    Names are listed in registration order: the bundled ones first, then the users'.

    Args:
        kind: what the registry holds, used in error messages ("learner hook", ...).
        extra_known: names shown after the registered ones in an unknown-name error without
            being registered (e.g. ``gym:<id>``, which the env registry resolves itself).
        check_name: called with each new name before it is registered; raises
            :class:`RegistryError` for a name the registry reserves.
    """

    def __init__(
        self,
        kind: str,
        *,
        extra_known: tuple[str, ...] = (),
        check_name: Callable[[str], None] | None = None,
    ) -> None:
        self.kind = kind
        self.extra_known = extra_known
        self._check_name = check_name
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T | None = None, *, force: bool = False) -> Any:
        """Registers ``obj`` under ``name``; without ``obj`` returns a decorator.

        Args:
            name: the name configs and ``get`` use; a non-empty string.
            obj: what to register; omitted, ``register(name)`` decorates a class or function.
            force: replace what is registered under ``name`` instead of raising.

        Returns:
            ``obj`` (or, without it, a decorator that registers and returns its argument).

        Raises:
            RegistryError: ``name`` is taken and ``force`` is false, or ``name`` is empty or
                reserved.
        """
        if not isinstance(name, str) or not name:
            raise RegistryError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if self._check_name is not None:
            self._check_name(name)

        def add(item: T) -> T:
            if name in self._items and not force:
                raise RegistryError(
                    f"{self.kind} '{name}' is already registered (by {self._items[name]!r}); "
                    "pick another name or pass force=True to replace it"
                )
            self._items[name] = item
            return item

        if obj is None:
            return add
        return add(obj)

    def unregister(self, name: str) -> T:
        """Removes ``name`` and returns what was registered under it.

        Raises:
            RegistryError: unknown name.
        """
        item = self.get(name)
        del self._items[name]
        return item

    def get(self, name: str) -> T:
        """Returns the object registered as ``name``.

        Raises:
            RegistryError: unknown name; the message lists the known ones.
        """
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise self.unknown(name) from None

    def unknown(self, name: str) -> RegistryError:
        """The error for an unknown ``name``: the known names and the closest one."""
        known = list(self._items)
        listed = ", ".join([*known, *self.extra_known])
        return RegistryError(
            f"unknown {self.kind} '{name}'{suggest(str(name), known)}; known: {listed}"
        )

    def copy(self) -> Registry[T]:
        """A registry of the same kind holding the same entries (tests register into one)."""
        twin: Registry[T] = Registry(
            self.kind, extra_known=self.extra_known, check_name=self._check_name
        )
        twin._items = dict(self._items)
        return twin

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._items)

    def items(self) -> list[tuple[str, T]]:
        """``(name, object)`` pairs, in registration order."""
        return list(self._items.items())
