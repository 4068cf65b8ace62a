"""A name -> object registry with helpful lookup errors."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def suggest(name: str, known: list[str]) -> str:
    """Returns " (did you mean 'x'?)" for the closest known name, or "" when none is close."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class Registry(Generic[T]):
    """Maps names to objects (classes, functions) registered by the library or by users.

    Args:
        kind: what the registry holds, used in error messages ("learner hook", ...).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T | None = None, *, force: bool = False) -> Any:
        """Registers ``obj`` under ``name``; without ``obj`` returns a decorator.

        Raises:
            KeyError: ``name`` is taken and ``force`` is false.
        """

        def add(item: T) -> T:
            if name in self._items and not force:
                raise KeyError(f"{self.kind} '{name}' is already registered; pass force=True")
            self._items[name] = item
            return item

        if obj is None:
            return add
        return add(obj)

    def get(self, name: str) -> T:
        """Returns the object registered as ``name``.

        Raises:
            KeyError: unknown name; the message lists the known ones.
        """
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items)
            raise KeyError(
                f"unknown {self.kind} '{name}'{suggest(name, known)}; known: {', '.join(known)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())
