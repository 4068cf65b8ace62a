"""The coordinator's state: one typed record of everything a restarted coordinator needs.

:class:`CoordinatorState` is owned by the :class:`~ding_lite.coordinator.Coordinator` and
handed to the parts that change it (the collector pool, the learner link). It turns itself
into JSON and back field by field, driven by the fields' types, so a field added to the
record (or to :class:`CollectorRecord`, or to :class:`~ding_lite.coordinator.RunStatus`) is
saved and taken back by a restarted coordinator with no other change.

Nothing read back is trusted: every value is checked against its field's type (counts are
non-negative ints, floats finite, ids worker ids, paths inside the run's folders), and the
first value that does not fit raises :class:`~ding_lite.coordinator.recovery.RecoveryError`
naming the field. A type's ``Annotated`` marks add the checks a plain type cannot say.
"""

from __future__ import annotations

import dataclasses
import math
import time
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple

from ding_lite.coordinator.marks import (
    MAX_COUNT,
    MAX_NUMBER,
    AddressMark,
    BatchMark,
    OneOf,
    PolicyPathMark,
    RunFolders,
    WorkerIdMark,
)
from ding_lite.coordinator.recovery import RecoveryError
from ding_lite.coordinator.status import RunStatus

PHASES = ("running", "closing", "closed", "finished")  # a run's phases, in this order
# A collector's state; STARTING: its start task is on its way (or it is due a new one).
STARTING, RUNNING, EXCLUDED, LOST, FAILED = "starting", "running", "excluded", "lost", "failed"
COLLECTOR_STATES = (STARTING, RUNNING, EXCLUDED, LOST, FAILED)


WorkerId = Annotated[str, WorkerIdMark()]
PolicyPath = Annotated[str, PolicyPathMark()]
Address = Annotated[str, AddressMark()]


class Policy(NamedTuple):
    """The latest published policy: its file, version and when it was published."""

    path: PolicyPath = ""
    version: int = 0
    published_at: float = 0.0


@dataclass
class CollectorRecord:
    """What the coordinator knows of one collector."""

    state: Annotated[str, OneOf(COLLECTOR_STATES)] = STARTING
    index: int = 0  # its start order: its seed is the run's seed + a stride times this
    envsteps: int = 0  # the env steps it reported last (its own running count)
    version: int | None = None  # the policy version it said it holds (None: not started)


@dataclass
class CoordinatorState:
    """Everything a restarted coordinator needs to take a run back (see :mod:`.recovery`)."""

    phase: Annotated[str, OneOf(PHASES)] = "running"  # "closed": only the result is due
    address: Annotated[str, AddressMark(empty=True)] = ""  # the master's host:port
    started_at: float = field(default_factory=time.time)  # the run's start, wall clock
    cpu_s: float = 0.0  # CPU seconds of the run's earlier coordinator processes
    learner: WorkerId | None = None  # the learner started for the run
    #: The address each started worker served at: the same id at another address is a
    #: new process (it restarted, or took over the id of one that died), not started.
    addresses: dict[WorkerId, Address] = field(default_factory=dict)
    bad_learners: set[str] = field(default_factory=set)  # "<id>@<address>" that failed
    policy: Policy = Policy()
    batch_size: int = 1  # samples per iteration, as the learner says
    envstep_base: int = 0  # env steps the learner had at its first start (a resumed run)
    inflight: Annotated[dict, BatchMark()] | None = None  # the learn task on its way, if any
    collectors: dict[WorkerId, CollectorRecord] = field(default_factory=dict)
    evaluator: WorkerId | None = None  # the collector that evaluates
    status: RunStatus = field(default_factory=RunStatus)

    def is_new_process(self, worker_id: str, address: str | None) -> bool:
        """Whether a started worker now registered at ``address`` is another process."""
        started = self.addresses.get(worker_id)
        return started is not None and address is not None and address != started

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values (sets as sorted lists, named tuples as lists)."""
        return _encode(self, type(self))

    @classmethod
    def from_json(cls, saved: Any, folders: RunFolders) -> CoordinatorState:
        """The record ``saved`` (from :meth:`to_json`) holds, every value checked.

        Raises:
            RecoveryError: a field is missing or a value does not fit its field.
        """
        return _decode(saved, cls, "", folders)

    def take(self, other: CoordinatorState) -> None:
        """Becomes ``other`` in place (the parts holding this record see the change)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(other, f.name))


# --- JSON, by type ------------------------------------------------------------------------
def hints(cls: type) -> dict[str, Any]:
    """The resolved type (``Annotated`` marks kept) of each field of a dataclass or a
    named tuple ``cls``, in field order."""
    resolved = typing.get_type_hints(cls, include_extras=True)  # a named tuple's, in order
    if not dataclasses.is_dataclass(cls):
        return resolved
    return {f.name: resolved[f.name] for f in dataclasses.fields(cls)}


def _encode(value: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None or hint is Any:
        return value
    if origin is Annotated:
        return _encode(value, args[0])
    if origin in (typing.Union, types.UnionType):
        return _encode(value, _not_none(args))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {name: _encode(getattr(value, name), h) for name, h in hints(hint).items()}
    if _is_named_tuple(hint):
        return [_encode(getattr(value, name), h) for name, h in hints(hint).items()]
    if origin is set:
        return sorted(_encode(v, args[0]) for v in value)
    if origin is list:
        return [_encode(v, args[0]) for v in value]
    if origin is dict:
        return {k: _encode(v, args[1]) for k, v in value.items()}
    return value  # str, int, float, bool, a bare dict: JSON already


def _decode(value: Any, hint: Any, where: str, folders: RunFolders) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin is Annotated:
        decoded = _decode(value, args[0], where, folders)
        for mark in args[1:]:
            if (problem := mark.check(decoded, folders)) is not None:
                raise RecoveryError(f"{where} {value!r:.100} {problem}")
        return decoded
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _decode(value, _not_none(args), where, folders)
    if dataclasses.is_dataclass(hint) or _is_named_tuple(hint):
        return _decode_record(value, hint, where, folders)
    if origin in (list, set):
        items = _expect(value, list, where)
        return origin(_decode(v, args[0], f"{where}[]", folders) for v in items)
    if origin is dict or hint is dict:
        items = _expect(value, dict, where)
        if not args:
            return items  # a bare dict: any JSON object (checked where it is used)
        return {
            _decode(k, args[0], where, folders): _decode(v, args[1], f"{where}.{k}", folders)
            for k, v in items.items()
        }
    return _scalar(value, hint, where)


def _decode_record(value: Any, cls: type, where: str, folders: RunFolders) -> Any:
    """A dataclass (saved as an object; keys it does not know are left out) or a named
    tuple (saved as a list of its fields)."""
    fields = hints(cls)
    if _is_named_tuple(cls):
        items = _expect(value, list, where)
        if len(items) != len(fields):
            raise RecoveryError(f"{where} must be [{', '.join(fields)}], got {value!r:.100}")
        saved = dict(zip(fields, items, strict=True))
    else:
        saved = _expect(value, dict, where)
    values = {}
    for name, hint in fields.items():
        key = f"{where}.{name}" if where else name
        if name not in saved:
            raise RecoveryError(f"missing field {key!r}")
        values[name] = _decode(saved[name], hint, key, folders)
    return cls(**values)


def _scalar(value: Any, hint: Any, where: str) -> Any:
    if hint is bool:
        return _expect(value, bool, where)
    if isinstance(value, bool):
        raise RecoveryError(f"field {where!r} must not be a bool")
    if hint is int:
        if not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
            raise RecoveryError(f"field {where!r} must be a count, got {_short(value)}")
        return value
    if hint is float:
        ok = isinstance(value, int | float) and math.isfinite(value)
        if not ok or abs(value) > MAX_NUMBER:
            raise RecoveryError(f"field {where!r} must be a finite number, got {_short(value)}")
        return float(value)
    if hint is str:
        return _expect(value, str, where)
    raise TypeError(f"{where}: no JSON form for the type {hint!r}")  # a field of a new type


def _short(value: Any) -> str:
    """``value`` for an error line: its repr, at most 60 characters (a huge int's repr is
    not even made: Python refuses ints of over 4300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**60:
        return f"an int of {len(hex(value)) * 4 // 3} digits or so"
    return f"{value!r:.60}"


def _expect(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        raise RecoveryError(f"field {where!r} has the wrong type {type(value).__name__}")
    return value


def _not_none(args: tuple[Any, ...]) -> Any:
    """The type of an optional field (``X | None``: ``X``)."""
    (hint,) = (a for a in args if a is not type(None))
    return hint


def _is_named_tuple(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields")
