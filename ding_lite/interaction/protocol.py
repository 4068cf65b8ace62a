"""What Master and Slave say to each other: routes, body schemas, ids, and result records."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ding_lite.interaction.envelope import ApiError, Code

ROLES = ("learner", "collector")

# Routes served by the master.
MASTER_REGISTER = "/master/register"
MASTER_HEARTBEAT = "/master/heartbeat"
MASTER_TASK_RESULT = "/master/task_result"
MASTER_DEREGISTER = "/master/deregister"
# Routes served by every slave.
SLAVE_TASK = "/slave/task"
SLAVE_PING = "/slave/ping"

REGISTER_SCHEMA = {"worker_id": str, "role": str, "address": str}
HEARTBEAT_SCHEMA = {"worker_id": str}
TASK_RESULT_SCHEMA = {
    "task_id": str,
    "worker_id": str,
    "success": bool,
    "result": dict,
    "error": str,
}
DEREGISTER_SCHEMA = {"worker_id": str}

#: The error of a task whose worker was declared lost before it answered (it may still have
#: done the task: a learner cut off mid-task trained on its batch all the same).
WORKER_LOST = "worker lost"
# Failures of the transport after which the task may have reached the worker all the same:
# the worker lost, no result in time, or the request sent and no answer (a cut link; TCP
# may deliver it once the link is back). A task the worker itself failed is none of them.
MAYBE_DONE = (WORKER_LOST, "timed out after ", "could not deliver task: ")


def may_have_arrived(error: str) -> bool:
    """Whether a task that failed with ``error`` may have reached its worker (and been done
    or be under way there): the caller should send it again as it was, not a new one."""
    return error.startswith(MAYBE_DONE)


TASK_SCHEMA = {"task_id": str, "name": str, "data": dict}
PING_SCHEMA: dict[str, type] = {}

_ID_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
ID_RULE = "1-128 characters from letters, digits and _ . : @ -"

# A worker id names a folder (``<path_data>/<worker id>/``), so it must be one plain path
# component: no separator, no ``.`` or ``..``, nothing a filesystem treats specially.
_WORKER_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
WORKER_ID_RULE = "1-64 characters from letters, digits and . _ - (and not '.' or '..')"


def is_valid_id(value: str) -> bool:
    """Whether ``value`` is a usable task id or task name (see :data:`ID_RULE`)."""
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def check_id(field_name: str, value: str) -> None:
    """Rejects a task id or task name that would be awkward in logs.

    Raises:
        ApiError: (400) naming the field.
    """
    if not is_valid_id(value):
        raise ApiError(Code.BAD_REQUEST, f"field '{field_name}' must be {ID_RULE}, got {value!r}")


def is_valid_worker_id(value: str) -> bool:
    """Whether ``value`` may be a worker id (see :data:`WORKER_ID_RULE`)."""
    return (
        isinstance(value, str)
        and _WORKER_ID_RE.fullmatch(value) is not None
        and value not in (".", "..")
    )


def check_worker_id(field_name: str, value: str) -> None:
    """Rejects a worker id that could not safely name the worker's data folder.

    Raises:
        ApiError: (400) naming the field and the rule.
    """
    if not is_valid_worker_id(value):
        raise ApiError(
            Code.BAD_REQUEST, f"field '{field_name}' must be {WORKER_ID_RULE}, got {value!r}"
        )


@dataclass(frozen=True)
class WorkerInfo:
    """A snapshot of one registered worker.

    Attributes:
        worker_id: the id the worker registered with.
        role: ``"learner"`` or ``"collector"``.
        address: where its ``/slave/*`` routes are served, ``host:port``.
        last_seen: ``time.monotonic()`` of its last registration, heartbeat or task result.
        alive: whether ``last_seen`` is within the master's heartbeat tolerance.
    """

    worker_id: str
    role: str
    address: str
    last_seen: float
    alive: bool


@dataclass(frozen=True)
class TaskResult:
    """The outcome of one task.

    Attributes:
        task_id: the id the master gave the task.
        worker_id: the worker it was sent to.
        name: the task name, e.g. ``"collector_data_task"``.
        success: True when the handler returned; False when it raised, the task could not be
            delivered, timed out, or its worker was lost.
        result: the handler's returned dict (``{}`` on failure).
        error: why it failed (``""`` on success), e.g. ``"timed out after 5 s"``.
        elapsed_s: seconds from sending to the outcome.
    """

    task_id: str
    worker_id: str
    name: str
    success: bool
    result: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    elapsed_s: float = 0.0
