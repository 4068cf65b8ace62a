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
import time
from pathlib import Path
from typing import Any, NamedTuple

from ding_lite.coordinator.marks import ADDRESS_RE
from ding_lite.utils import failpoint
from ding_lite.utils.file_io import atomic_write_text
from ding_lite.utils.paths import is_worker_id

RECOVERY_FILE = "coordinator_state.json"
FORMAT = 2  # 2: the coordinator's record field by field (collectors one record each)
PERIODIC_SAVE_S = 1.0  # a change nothing else saves is saved within this many seconds
KEPT_VALUES = 1000  # the latest entries of the status's lists that are saved
ROLES = ("learner", "collector")
MAX_FILE_BYTES = 64 * 2**20  # a larger file was not written by a coordinator


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
            with self.path.open("rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise RecoveryError(f"{self.path} cannot be read: {err.strerror}") from None
        if len(data) > MAX_FILE_BYTES:
            raise RecoveryError(f"{self.path} is over {MAX_FILE_BYTES >> 20} MiB")
        try:
            state = json.loads(data.decode())
        except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
            why = "nested too deeply" if isinstance(err, RecursionError) else err
            raise RecoveryError(f"{self.path} is not JSON: {why}") from None
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
    back = Saved(state, [_worker(w) for w in workers], ledger)
    _check_agrees(back)
    return back


def _check_agrees(saved: Saved) -> None:
    """What one field says must agree with what others say: a file whose values are each
    well formed may still describe no state a coordinator was ever in.

    Raises:
        RecoveryError: the evaluator is no collector of the run, an address belongs to no
            started worker or contradicts where that worker was registered, the batch on
            its way holds files the ledger did not hand out, the run is closed with no
            stop reason, solved with no evaluation, or an evaluation names no policy
            version.
    """
    state, status = saved.state, saved.state.status
    if state.evaluator is not None and state.evaluator not in state.collectors:
        raise RecoveryError(f"evaluator {state.evaluator!r} is not a collector of the run")
    known = {state.learner, *state.collectors}
    registered = {worker_id: address for worker_id, _, address in saved.workers}
    for worker_id, address in state.addresses.items():
        if worker_id not in known:
            raise RecoveryError(f"addresses: {worker_id!r} is no worker the run started")
        if registered.get(worker_id, address) != address:
            raise RecoveryError(f"addresses: {worker_id!r} at {address}, registered elsewhere")
    if state.inflight is not None:
        handed = saved.ledger.get("handed")
        handed = handed if isinstance(handed, list) else []
        paths = {m.get("path") for m in handed if isinstance(m, dict)}
        if not {m["path"] for m in state.inflight["files"]} <= paths:
            raise RecoveryError("inflight: files the ledger did not hand to the learner")
    if state.phase in ("closed", "finished") and status.stop_reason is None:
        raise RecoveryError(f"phase {state.phase!r} but the run has no stop reason")
    if status.solved and status.eval_return is None:
        raise RecoveryError("status: solved with no evaluation")
    if (status.eval_return is None) != (status.eval_policy_version is None):
        raise RecoveryError("status: an evaluation's return and policy version go together")


def _worker(item: Any) -> tuple[str, str, str]:
    if not (isinstance(item, list) and len(item) == 3 and all(isinstance(v, str) for v in item)):
        raise RecoveryError(f"a worker must be [id, role, address], got {item!r:.80}")
    worker_id, role, address = item
    if not is_worker_id(worker_id) or role not in ROLES or not ADDRESS_RE.fullmatch(address):
        raise RecoveryError(f"not a worker: {item!r:.80}")
    return worker_id, role, address


def address_of(state: dict[str, Any] | None) -> str | None:
    """The coordinator address a saved state records (None: none)."""
    address = (state or {}).get("address")
    return address if isinstance(address, str) and ADDRESS_RE.fullmatch(address) else None


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
