"""The shape of status.json, checked once where it is read.

A reader (``ding-lite status``, the dashboard) cannot know who edited the file since the run
wrote it, so :func:`check_status` turns the parsed JSON into the known shape before any
formatting code sees it: every field its type (a number is a finite int or float, never a
bool), within a range the views can print, every text without control characters; keys it
does not know are left out. Anything else is a :class:`StatusFileError` naming the field,
which the views print as one line. Fields may be missing: a run that is starting, or whose
figures could not be read, writes only some of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ding_lite.utils.text import printable, shown

#: Counts (env steps, iterations, versions) up to int64, what tensorboard and torch hold.
MAX_COUNT = 2**63 - 1
#: Figures (returns, losses, lags) whose size any formatting handles.
MAX_FIGURE = 1e18
#: Seconds: a Unix time or a duration (1e11 s is some 3,000 years).
MAX_SECONDS = 1e11
MAX_PID = 2**31 - 1  # a C int: what os.kill takes

SCHEMA = 1
#: States of a run in status.json; the last three are final.
STATES = ("starting", "running", "stopping", "finished", "failed", "interrupted")
FINAL_STATES = STATES[3:]

Check = Callable[[Any, str], Any]


class StatusFileError(ValueError):
    """A status.json that is not a status document of this version; the message names the
    field and what it holds."""


def _refuse(name: str, wants: str, value: Any) -> StatusFileError:
    return StatusFileError(f"{name} must be {wants}, got {shown(value)}")


def whole(low: int = 0, high: int = MAX_COUNT) -> Check:
    """A whole number (not a bool) from ``low`` to ``high``."""

    def check(value: Any, name: str) -> int:
        if type(value) is not int or not low <= value <= high:
            raise _refuse(name, f"a whole number from {low:,} to {high:,}", value)
        return value

    return check


def number(low: float = -MAX_FIGURE, high: float = MAX_FIGURE) -> Check:
    """A finite int or float (not a bool) from ``low`` to ``high``."""

    def check(value: Any, name: str) -> int | float:
        if (
            type(value) not in (int, float)
            or not low <= value <= high
            or (type(value) is float and not math.isfinite(value))
        ):
            raise _refuse(name, f"a number from {low:g} to {high:g}", value)
        return value

    return check


def text(*choices: str) -> Check:
    """A string (one of ``choices`` when given), control characters removed."""

    def check(value: Any, name: str) -> str:
        if not isinstance(value, str):
            raise _refuse(name, "text", value)
        clean = printable(value)
        if choices and clean not in choices:
            raise _refuse(name, f"one of {', '.join(choices)}", value)
        return clean

    return check


def flag(value: Any, name: str) -> bool:
    """true or false."""
    if not isinstance(value, bool):
        raise _refuse(name, "true or false", value)
    return value


def optional(inner: Check) -> Check:
    """``inner``, or null."""

    def check(value: Any, name: str) -> Any:
        return None if value is None else inner(value, name)

    return check


def record(fields: dict[str, Check], *, required: tuple[str, ...] = ()) -> Check:
    """A JSON object: each field of ``fields`` that is present, checked; others left out."""

    def check(value: Any, name: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _refuse(name, "a JSON object", value)
        for key in required:
            if key not in value:
                raise StatusFileError(f"{_join(name, key)} is missing")
        return {k: fields[k](v, _join(name, k)) for k, v in value.items() if k in fields}

    return check


def listing(item: Check) -> Check:
    """A list, each item checked."""

    def check(value: Any, name: str) -> list[Any]:
        if not isinstance(value, list):
            raise _refuse(name, "a list", value)
        return [item(v, f"{name}[{i}]") for i, v in enumerate(value)]

    return check


def table(values: Check) -> Check:
    """A JSON object of any keys (control characters removed), each value checked."""

    def check(value: Any, name: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _refuse(name, "a JSON object", value)
        return {printable(k): values(v, _join(name, printable(k, 40))) for k, v in value.items()}

    return check


def _join(name: str, key: str) -> str:
    return f"{name}.{printable(key, 40)}" if name else printable(key, 40)


COUNT, SECONDS, FIGURE = whole(), number(0.0, MAX_SECONDS), number()
SHARE = number(0.0, 1.0)  # a win rate

EVAL = record(
    {
        "return_mean": optional(FIGURE),
        "win_rate": optional(SHARE),
        "policy_version": optional(COUNT),
        "envstep": optional(COUNT),
    }
)
WORKER = record(
    {
        "id": text(),
        "role": text(),
        "host": optional(text()),
        "state": text(),
        "heartbeat_age_s": optional(SECONDS),
        "version": optional(COUNT),
        "rollouts": optional(COUNT),
        "evaluates": flag,
    }
)

LEAGUE = record(
    {
        "pool": COUNT,
        "players": COUNT,
        "matches": COUNT,
        "exploitability": optional(FIGURE),
        "top": listing(
            record(
                {
                    "name": text(),
                    "kind": text("player", "pool", "retired"),
                    "rating": FIGURE,
                    "games": number(0.0, MAX_FIGURE),
                    "main_score": optional(SHARE),
                }
            )
        ),
    }
)


#: Every field of status.json (docs/monitoring.rst says what each means).
STATUS_FIELDS: dict[str, Check] = {
    "schema": whole(SCHEMA, SCHEMA),
    "pipeline": text("serial", "parallel"),
    "exp_name": text(),
    "exp_dir": text(),
    "host": text(),
    "pid": whole(0, MAX_PID),
    "state": text(*STATES),
    "stop_reason": optional(text()),
    "stop_detail": optional(text()),
    "started_at": SECONDS,
    "updated_at": SECONDS,
    "elapsed_s": SECONDS,
    "iteration": COUNT,
    "envstep": COUNT,
    "max_env_step": optional(COUNT),
    "sps": number(0.0, MAX_FIGURE),
    "train_return": optional(FIGURE),
    "train_win_rate": optional(SHARE),
    "policy_version": optional(COUNT),
    "eval": optional(EVAL),
    "best_eval": optional(
        record({"return_mean": optional(FIGURE), "policy_version": optional(COUNT)})
    ),
    "workers": listing(WORKER),
    "lag": record({"recent": listing(FIGURE), "mean": optional(FIGURE), "max": optional(FIGURE)}),
    "ledger": optional(table(COUNT)),
    "restarts": COUNT,
    "failed_tasks": COUNT,
    "dropped_env_steps": COUNT,
    "gradient_steps": COUNT,
    "waiting_on": text(),
    "writer": record({"writes": COUNT, "seconds": SECONDS, "wall_seconds": SECONDS}),
    "league": optional(LEAGUE),
}
STATUS = record(STATUS_FIELDS, required=("schema",))


def check_status(doc: Any) -> dict[str, Any]:
    """``doc`` (parsed JSON) in the known shape of status.json (:data:`SCHEMA`).

    Raises:
        StatusFileError: a field of the wrong type or out of range (the message names it),
            or no ``schema`` of this version.
    """
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or type(doc["schema"]) is not int:
        raise StatusFileError(f"not a ding_lite status file (schema {SCHEMA})")
    return STATUS(doc, "")
