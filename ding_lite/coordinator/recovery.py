"""The coordinator's recovery file: what a restarted coordinator needs to take a run back.

The coordinator keeps ``<exp_dir>/coordinator_state.json`` current as the run changes (a
learner or collector started, a batch handed to the learner, its verdict booked, an
evaluation, and at most once a second otherwise), written atomically and fsynced. A new
coordinator started on the run dir (``ding-lite parallel`` restarting a dead one, or
``ding-lite coordinator --resume``) rebuilds itself from it and from the data folder:

- the workers the master knew (a worker that outlived the old coordinator is taken back
  without a new start task; one that is not heard from within the heartbeat tolerance is
  lost, as any other);
- the ledger: counts, the files waiting and the batch handed to the learner. A file on
  disk that the file does not list was written after the last save: it is counted then,
  once. The handed batch is sent again under its batch id, and a learner that trained on
  it already answers as before instead of training twice;
- the run's figures (env steps, iterations, evaluations, the best checkpoint, restarts).

status.json is for people; this file is for the coordinator. It holds the coordinator's
record (:class:`~ding_lite.coordinator.state.CoordinatorState`, field by field, which
checks its own values) beside the file's own keys: ``format``, ``saved_at``, ``workers``
and ``ledger``. Nothing in it is trusted: a path must lie inside the run's folders and
name a rollout or policy file, ids must be worker ids, numbers must be numbers, else the
file is refused as damaged; so is a file of another ``format``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any, NamedTuple

from ding_lite.utils import failpoint
from ding_lite.utils.file_io import atomic_write_text
from ding_lite.utils.paths import is_worker_id

RECOVERY_FILE = "coordinator_state.json"
FORMAT = 2  # 2: the coordinator's record field by field (collectors one record each)
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


# --- the file's content ------------------------------------------------------------------
class Saved(NamedTuple):
    """What a saved file holds, checked: the coordinator's record, the workers the master
    knew and the ledger's state (checked again by the ledger when it takes it back)."""

    state: Any  # a CoordinatorState
    workers: list[tuple[str, str, str]]
    ledger: dict[str, Any]


def snapshot(state: Any, workers: list[Any], ledger: dict[str, Any]) -> dict[str, Any]:
    """The file's content: ``state`` (a :class:`~.state.CoordinatorState`) with its clocks
    made the wall clock's, the master's ``workers`` and the ledger's state."""
    status = dataclasses.replace(state.status)
    for f in dataclasses.fields(status):
        if isinstance(value := getattr(status, f.name), list):
            setattr(status, f.name, value[-KEPT_VALUES:])
    # perf_counter() is this process's own clock: saved as the wall-clock time it was.
    if status.first_learn_at is not None:
        status.first_learn_at = time.time() - (time.perf_counter() - status.first_learn_at)
    cpu_s = state.cpu_s + time.process_time()
    saved = dataclasses.replace(state, status=status, cpu_s=cpu_s).to_json()
    return {
        **saved,
        "format": FORMAT,
        "saved_at": time.time(),
        "workers": [[w.worker_id, w.role, w.address] for w in workers],
        "ledger": ledger,
    }


def read(saved: dict[str, Any], record: Any, folders: Any) -> Saved:
    """The content of a file :func:`snapshot` wrote, every value checked, the clocks this
    process's (``record``: the :class:`~.state.CoordinatorState` class to read).

    Raises:
        RecoveryError: a field is missing, of the wrong type, or a path lies outside the
            run's folders.
    """
    state = record.from_json(saved, folders)
    if state.status.first_learn_at is not None:  # back on this process's perf_counter()
        first = time.perf_counter() - (time.time() - state.status.first_learn_at)
        state.status.first_learn_at = first
    workers = saved.get("workers")
    if not isinstance(workers, list):
        raise RecoveryError("field 'workers' must be a list of [id, role, address]")
    ledger = saved.get("ledger")
    if not isinstance(ledger, dict):
        raise RecoveryError("field 'ledger' must be an object")
    return Saved(state, [_worker(w) for w in workers], ledger)


def _worker(item: Any) -> tuple[str, str, str]:
    if not (isinstance(item, list) and len(item) == 3 and all(isinstance(v, str) for v in item)):
        raise RecoveryError(f"a worker must be [id, role, address], got {item!r:.80}")
    worker_id, role, address = item
    if not is_worker_id(worker_id) or role not in ROLES or not _ADDRESS_RE.fullmatch(address):
        raise RecoveryError(f"not a worker: {item!r:.80}")
    return worker_id, role, address


def address_of(state: dict[str, Any] | None) -> str | None:
    """The coordinator address a saved state records (None: none)."""
    address = (state or {}).get("address")
    return address if isinstance(address, str) and _ADDRESS_RE.fullmatch(address) else None


__all__ = [
    "FORMAT",
    "RECOVERY_FILE",
    "RecoveryError",
    "RecoveryFile",
    "Saved",
    "address_of",
    "read",
    "snapshot",
]
