"""CountVar: an integer counter with DI-engine's ``.val`` / ``.add()`` that also acts as an int.

``BaseLearner.last_iter`` is one, as DI-engine users expect, yet code written for a plain int
(comparisons, ``%``, f-strings such as ``{it:08d}``, ``range(it)``, ``int(it)``) keeps working.
It is never what a checkpoint or JSON file stores: those get ``int(counter)``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any


@functools.total_ordering
class CountVar:
    """A mutable integer counter.

    Args:
        init_val: the starting value.
    """

    __slots__ = ("_val",)
    # Mutable: equal to an int, so it must not pretend to hash like one. (typeshed types
    # object.__hash__ as a method, not the None that marks a class unhashable.)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, init_val: int = 0) -> None:
        self._val = int(init_val)

    @property
    def val(self) -> int:
        """The current value."""
        return self._val

    def add(self, add_num: int = 1) -> None:
        """Adds ``add_num`` (DI-engine's name)."""
        self._val += int(add_num)

    def update(self, val: int) -> None:
        """Sets the value."""
        self._val = int(val)

    def __int__(self) -> int:
        return self._val

    def __index__(self) -> int:
        return self._val

    def __float__(self) -> float:
        return float(self._val)

    def __bool__(self) -> bool:
        return bool(self._val)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CountVar):
            return self._val == other._val
        if isinstance(other, int | float):
            return self._val == other
        return NotImplemented

    def __lt__(self, other: Any) -> bool:
        if isinstance(other, CountVar):
            return self._val < other._val
        if isinstance(other, int | float):
            return self._val < other
        return NotImplemented

    def __format__(self, spec: str) -> str:
        return format(self._val, spec)

    def __str__(self) -> str:
        return str(self._val)

    def __repr__(self) -> str:
        return f"CountVar({self._val})"


def _arith(op: Any, reflected: bool = False) -> Any:
    def method(self: CountVar, other: Any) -> Any:
        other = int(other) if isinstance(other, CountVar) else other
        if not isinstance(other, int | float):
            return NotImplemented
        return op(other, self._val) if reflected else op(self._val, other)

    return method


for _name, _op in {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "truediv": operator.truediv,
    "mod": operator.mod,
}.items():
    setattr(CountVar, f"__{_name}__", _arith(_op))
    setattr(CountVar, f"__r{_name}__", _arith(_op, reflected=True))
