"""Checks a field of the coordinator's record adds to its type, for values read back from
the recovery file (see :mod:`.state`): ``Annotated[str, OneOf(...)]`` and the like.

A mark's ``check(value, folders)`` gets the value already decoded by its base type and
says what is wrong with it (None: nothing). The bounds are what the rest of the code can
hold: a count is at most :data:`MAX_COUNT` (exact as a float, well inside tensorboard's
int64 steps), a number at most :data:`MAX_NUMBER` in size (its sums and products stay
finite, so the state can always be saved again), a line of text is one printable line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ding_lite.utils.paths import is_inside, is_worker_id, parse_rollout_path

MAX_COUNT = 2**53 - 1  # the largest count read back: every int up to it is exact as a float
MAX_NUMBER = 1e15  # the largest size of a number read back
MAX_LINE = 500  # the longest line of text read back
ADDRESS_RE = re.compile(r"[A-Za-z0-9.:\[\]_-]{1,128}:\d{1,5}")
_PRINTABLE_LINE_RE = re.compile(r"[^\x00-\x1f\x7f-\x9f]*")
_BATCH_ID_RE = re.compile(r"[0-9a-f]{1,64}")


class RunFolders(NamedTuple):
    """The folders every path in a saved state must lie inside."""

    path_data: Path
    path_policy: Path


@dataclass(frozen=True)
class OneOf:
    """Mark of a ``str`` field: the value is one of ``choices``."""

    choices: tuple[str, ...]

    def check(self, value: str, folders: RunFolders) -> str | None:
        return None if value in self.choices else f"must be one of {', '.join(self.choices)}"


class WorkerIdMark:
    """Mark of a ``str`` field: the value is a worker id."""

    def check(self, value: str, folders: RunFolders) -> str | None:
        return None if is_worker_id(value) else "is not a worker id"


class PolicyPathMark:
    """Mark of a ``str`` field: "" (none yet) or a path inside ``path_policy``."""

    def check(self, value: str, folders: RunFolders) -> str | None:
        ok = not value or is_inside(value, folders.path_policy)
        return None if ok else "is not inside path_policy"


class AddressMark:
    """Mark of a ``str`` field: ``host:port`` ("" where ``empty`` allows none yet)."""

    def __init__(self, empty: bool = False) -> None:
        self.empty = empty

    def check(self, value: str, folders: RunFolders) -> str | None:
        if (self.empty and not value) or ADDRESS_RE.fullmatch(value):
            return None
        return "is not an address (host:port)"


class LineMark:
    """Mark of a ``str`` field shown to people: one printable line, at most
    :data:`MAX_LINE` characters (no terminal control sequence, no markup break-out)."""

    def check(self, value: str, folders: RunFolders) -> str | None:
        if len(value) <= MAX_LINE and _PRINTABLE_LINE_RE.fullmatch(value):
            return None
        return f"is not one printable line of at most {MAX_LINE} characters"


def one_line(text: str) -> str:
    """``text`` as :class:`LineMark` wants it: control characters (newlines included) as
    spaces, cut to :data:`MAX_LINE` characters."""
    flat = re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text)
    return flat if len(flat) <= MAX_LINE else flat[: MAX_LINE - 3] + "..."


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= MAX_NUMBER
    )


#: What a :class:`Shape` key holds: a count, a number, or either of those or None.
KINDS = {
    "count": is_count,
    "number": is_number,
    "number?": lambda v: v is None or is_number(v),
}


@dataclass(frozen=True)
class Shape:
    """Mark of a bare ``dict`` field: exactly the keys of ``keys``, each of its kind
    (see :data:`KINDS`), e.g. ``Shape((("policy_version", "count"),))``."""

    keys: tuple[tuple[str, str], ...]

    def check(self, value: dict, folders: RunFolders) -> str | None:
        kinds = dict(self.keys)
        if set(value) != set(kinds):
            return f"must have exactly the keys {', '.join(kinds)}"
        for key, kind in kinds.items():
            if not KINDS[kind](value[key]):
                return f"has a {key} that is not a {kind.rstrip('?')}"
        return None


BEST = Shape((("policy_version", "count"), ("return_mean", "number")))


class BatchMark:
    """Mark of the learn task on its way (``inflight``): ``files`` (rollout files inside
    ``path_data``, each with its metadata as its name says), ``envstep``, ``batch`` (the
    batch id) and, while the learner has not been told it, ``best``."""

    def check(self, value: dict, folders: RunFolders) -> str | None:
        if not {"files", "envstep", "batch"} <= set(value) <= {"files", "envstep", "batch", "best"}:
            return "must have the keys files, envstep, batch (and best)"
        if not is_count(value["envstep"]):
            return "has an envstep that is not a count"
        if not (isinstance(value["batch"], str) and _BATCH_ID_RE.fullmatch(value["batch"])):
            return "has a batch id that is not a hex string"
        best = value.get("best", {})
        if "best" in value and (not isinstance(best, dict) or BEST.check(best, folders)):
            return "has a best evaluation that is not {policy_version, return_mean}"
        files = value["files"]
        if not isinstance(files, list) or not all(_is_rollout(m, folders) for m in files):
            return "has files that are not rollout files inside path_data, as their names say"
        return None


def _is_rollout(meta: Any, folders: RunFolders) -> bool:
    path = meta.get("path") if isinstance(meta, dict) else None
    parsed = parse_rollout_path(path) if isinstance(path, str) else None
    if parsed is None or not isinstance(path, str) or not is_inside(path, folders.path_data):
        return False
    extra = {k: v for k, v in meta.items() if k not in parsed}  # a scan adds when it was made
    said = all(type(meta.get(k)) is type(v) and meta[k] == v for k, v in parsed.items())
    return said and (not extra or (set(extra) == {"created"} and is_number(extra["created"])))
