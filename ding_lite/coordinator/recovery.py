"""The coordinator's recovery file: what a restarted coordinator needs to take a run back.

The coordinator keeps ``<exp_dir>/coordinator_state.json`` current as the run changes (a
learner or collector started, a batch handed to the learner, its verdict booked, an
evaluation, and at most once a second otherwise), written atomically and fsynced. A new
coordinator started on the run dir (the supervisor restarting a dead one, or
``ding-lite coordinator --resume``) rebuilds itself from it and from the data folder:

- the workers the master knew (a worker that outlived the old coordinator is taken back
  without a new start task; one that is not heard from within the heartbeat tolerance is
  lost, as any other);
- the ledger: counts, the files waiting and the batch handed to the learner. A file on
  disk that the file does not list was written after the last save: it is counted then,
  once. The handed batch is sent again under its batch id, and a learner that trained on
  it already answers as before instead of training twice;
- the run's figures (env steps, iterations, evaluations, the best checkpoint, restarts).

status.json is for people; this file is for the coordinator. Nothing in it is trusted: a
path must lie inside the run's folders and name a rollout or policy file, ids must be
worker ids, numbers must be numbers, else the file is refused as damaged.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any

from ding_lite.coordinator.status import RunStatus
from ding_lite.utils import failpoint
from ding_lite.utils.file_io import atomic_write_text
from ding_lite.utils.paths import is_inside, is_worker_id

RECOVERY_FILE = "coordinator_state.json"
FORMAT = 1
PERIODIC_SAVE_S = 1.0  # a change nothing else saves is saved within this many seconds
KEPT_VALUES = 1000  # the latest entries of the status's lists that are saved
ROLES = ("learner", "collector")
_ADDRESS_RE = re.compile(r"[A-Za-z0-9.:\[\]_-]{1,128}:\d{1,5}")


class RecoveryError(ValueError):
    """The recovery file is damaged or was not written by a coordinator of this run."""


class RecoveryFile:
    """``<run_dir>/coordinator_state.json``: saving and loading the coordinator's state.

    Args:
        run_dir: the run's experiment dir.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / RECOVERY_FILE
        self._next_periodic = 0.0

    def save(self, state: dict[str, Any], kind: str) -> None:
        """Writes ``state`` (from :func:`snapshot`); ``kind`` names the change, for logs
        and for the crash tests' failpoints (``coordinator_state.<kind>``)."""
        text = json.dumps(state, sort_keys=True, allow_nan=False)
        failpoint.reached(f"coordinator_state.{kind}", lambda: self._half_written(text))
        atomic_write_text(text + "\n", self.path)
        self._next_periodic = time.monotonic() + PERIODIC_SAVE_S

    def periodic_due(self) -> bool:
        return time.monotonic() >= self._next_periodic

    def _half_written(self, text: str) -> None:
        """What a kill in the middle of a write leaves: the old file and half a temp file."""
        tmp = self.path.with_name(f".{self.path.name}.failpoint.tmp")
        tmp.write_text(text[: len(text) // 2])

    def load(self) -> dict[str, Any] | None:
        """The saved state; None when there is none.

        Raises:
            RecoveryError: the file cannot be read or is not a coordinator state.
        """
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        except OSError as err:
            raise RecoveryError(f"{self.path} cannot be read: {err.strerror}") from None
        try:
            state = json.loads(text)
        except ValueError as err:
            raise RecoveryError(f"{self.path} is not JSON: {err}") from None
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise RecoveryError(f"{self.path} is not a coordinator state of format {FORMAT}")
        return state

    def discard(self) -> None:
        """Removes the file (a run that starts afresh in the dir)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


# --- the state of a coordinator ------------------------------------------------------------
def snapshot(c: Any) -> dict[str, Any]:
    """The state of coordinator ``c`` (a :class:`~ding_lite.coordinator.Coordinator`)."""
    pool = c.collectors
    return {
        "format": FORMAT,
        "phase": c.phase,
        "address": c.address,
        "saved_at": time.time(),
        "started_at": c.started_at,
        "cpu_s": c.cpu_before + time.process_time(),
        "workers": [[w.worker_id, w.role, w.address] for w in c.transport.workers()],
        "learner": c.learner,
        "addresses": dict(c.addresses),
        "bad_learners": sorted(c._bad_learners),
        "policy": list(c._policy),
        "batch_size": c.batch_size,
        "envstep_base": c._envstep_base,
        "inflight": c.inflight,
        "collectors": {
            "state": dict(pool.state),
            "index": dict(pool.index),
            "envsteps": dict(pool.envsteps),
            "versions": dict(pool.versions),
            "evaluator": pool.evaluator,
        },
        "ledger": c.rollouts.state(),
        "status": _status_state(c.status),
    }


def _status_state(status: RunStatus) -> dict[str, Any]:
    state = dataclasses.asdict(status)
    for key, value in state.items():
        if isinstance(value, list):
            state[key] = value[-KEPT_VALUES:]
    # perf_counter() is this process's own clock: saved as the wall-clock time it was.
    if status.first_learn_at is not None:
        state["first_learn_at"] = time.time() - (time.perf_counter() - status.first_learn_at)
    return state


def restore(c: Any, state: dict[str, Any]) -> None:
    """Puts coordinator ``c`` back in the saved ``state`` (checked first: nothing changes
    when it raises).

    Raises:
        RecoveryError: a field is missing, of the wrong type, or a path lies outside the
            run's folders.
    """
    check = _Checker()
    workers = [check.worker(w) for w in check.get(state, "workers", list)]
    learner = check.get(state, "learner", (str, type(None)))
    if learner is not None and not is_worker_id(learner):
        raise RecoveryError(f"learner {learner!r:.60} is not a worker id")
    policy = check.get(state, "policy", list)
    if len(policy) != 3 or not isinstance(policy[0], str) or not _count(policy[1]):
        raise RecoveryError("policy must be [path, version, published_at]")
    if policy[0] and not is_inside(policy[0], c.path_policy):
        raise RecoveryError(f"policy path {policy[0]!r:.100} is not inside path_policy")
    pool = check.get(state, "collectors", dict)
    ledger = check.get(state, "ledger", dict)
    status = _restored_status(check.get(state, "status", dict))
    inflight = check.get(state, "inflight", (dict, type(None)))
    phase = check.get(state, "phase", str)
    saved = check.get(state, "addresses", dict).items()
    addresses = {k: v for k, v in saved if is_worker_id(k) and isinstance(v, str)}
    c.rollouts.restore(ledger)  # checks every path; raises ValueError
    c.transport.restore_workers(workers)
    c.phase = phase
    c.started_at = float(check.get(state, "started_at", (int, float)))
    c.cpu_before = float(check.get(state, "cpu_s", (int, float)))
    c.learner = learner
    c.addresses = addresses
    c._bad_learners = set(check.get(state, "bad_learners", list))
    c._policy = (policy[0], int(policy[1]), float(policy[2]))
    c.batch_size = int(check.get(state, "batch_size", int))
    c._envstep_base = int(check.get(state, "envstep_base", int))
    c.inflight = inflight
    c.collectors.restore(pool)
    c.status = status


def _restored_status(saved: dict[str, Any]) -> RunStatus:
    names = {f.name for f in dataclasses.fields(RunStatus)}
    values = {k: v for k, v in saved.items() if k in names}
    try:
        status = RunStatus(**values)
    except TypeError as err:
        raise RecoveryError(f"status: {err}") from None
    if status.first_learn_at is not None:  # back on this process's perf_counter() clock
        status.first_learn_at = time.perf_counter() - (time.time() - status.first_learn_at)
    return status


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class _Checker:
    """Reads fields of an untrusted state, raising RecoveryError naming the field."""

    def get(self, state: dict[str, Any], key: str, types: Any) -> Any:
        if key not in state:
            raise RecoveryError(f"missing field {key!r}")
        value = state[key]
        if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else ()):
            raise RecoveryError(f"field {key!r} must not be a bool")
        if not isinstance(value, types):
            raise RecoveryError(f"field {key!r} has the wrong type {type(value).__name__}")
        return value

    def worker(self, item: Any) -> tuple[str, str, str]:
        if not (isinstance(item, list) and len(item) == 3 and all(map(_is_str, item))):
            raise RecoveryError(f"a worker must be [id, role, address], got {item!r:.80}")
        worker_id, role, address = item
        if not is_worker_id(worker_id) or role not in ROLES or not _ADDRESS_RE.fullmatch(address):
            raise RecoveryError(f"not a worker: {item!r:.80}")
        return worker_id, role, address


def address_of(state: dict[str, Any] | None) -> str | None:
    """The coordinator address a saved state records (None: none)."""
    address = (state or {}).get("address")
    return address if isinstance(address, str) and _ADDRESS_RE.fullmatch(address) else None


__all__ = ["RECOVERY_FILE", "RecoveryError", "RecoveryFile", "address_of", "restore", "snapshot"]
