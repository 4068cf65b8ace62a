"""``<run dir>/status.json``: a run's live state, rewritten about once a second.

A :class:`StatusWriter` thread asks the run for a snapshot (a dict of plain figures) and
writes it atomically, so a reader (``ding-lite status``, ``ding-lite dashboard``, a script)
always finds whole JSON: the previous version or the new one. The writer times itself;
its total is in the file (``writer``), so the cost of watching a run is on record.
Nothing secret goes in: the snapshot functions copy figures, never the config's token.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.entry.live.status_schema import (
    FINAL_STATES,
    SCHEMA,
    STATES,
    StatusFileError,
    check_status,
)
from ding_lite.utils.file_io import atomic_write_text
from ding_lite.utils.log import get_logger
from ding_lite.utils.text import printable

__all__ = ["FINAL_STATES", "SCHEMA", "STATES", "STATUS_FILE", "StatusWriter", "read_status"]

STATUS_FILE = "status.json"
#: A status.json is a few KB (about 200 bytes a worker); a reader reads no more than this.
MAX_STATUS_BYTES = 4 << 20


class StatusWriter:
    """Writes ``snapshot()`` to ``<run_path>/status.json`` every ``interval`` seconds.

    Args:
        run_path: the run's experiment dir.
        snapshot: returns the run's figures; called from the writer's thread, so it must
            only copy (a figure read while the run changes it is fine: the next write has
            the new one).
        pipeline: ``"serial"`` or ``"parallel"``.
        exp_name: the experiment's name (shown by the views).
        interval: seconds between writes.
    """

    def __init__(
        self,
        run_path: str | os.PathLike,
        snapshot: Callable[[], dict[str, Any]],
        *,
        pipeline: str,
        exp_name: str,
        interval: float = 1.0,
    ) -> None:
        self.path = Path(run_path) / STATUS_FILE
        self.snapshot = snapshot
        self.interval = interval
        # The writer's own time: snapshots, JSON and writes. ``seconds`` is its thread's CPU
        # time (what watching costs the run); ``wall_seconds`` also counts waits for the GIL
        # while the training thread holds it, during which the run goes on.
        self.seconds = 0.0
        self.wall_seconds = 0.0
        self.writes = 0
        #: ``"starting"`` until the run sets ``"running"``; :meth:`close` sets a final one.
        self.state = "starting"
        self._head = {
            "schema": SCHEMA,
            "pipeline": pipeline,
            "exp_name": exp_name,
            "exp_dir": str(Path(run_path).resolve()),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": time.time(),
        }
        self._start = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one write at a time: the thread's or the final one
        self._thread: threading.Thread | None = None
        self._failed = False

    def start(self) -> StatusWriter:
        """Writes the first snapshot now, then one every ``interval`` seconds."""
        self.write()
        self._thread = threading.Thread(target=self._run, name="status-writer", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.write()

    def write(self, **final: Any) -> None:
        """Writes one snapshot (``final`` figures, e.g. the state and stop reason, on top)."""
        with self._lock:
            began, cpu0 = time.perf_counter(), time.thread_time()
            try:
                body = {**self.snapshot(), **final}
            except RuntimeError:  # a container changed size while it was copied: next time
                if not final:
                    return
                body = dict(final)
            except Exception as err:  # watching must never end the run: say it once
                self._warn_once(f"status.json: the run's figures could not be read ({err!r})")
                body = dict(final)
            state = self.state
            if state == "running" and body.get("stop_reason"):
                state = "stopping"  # the run ends: workers close, the last figures come in
            if body.get("state", state) in FINAL_STATES:
                body["workers"] = [_closed(w) for w in body.get("workers", [])]
            doc = {
                **self._head,
                "state": state,
                **body,
                "updated_at": time.time(),
                "elapsed_s": round(began - self._start, 3),
                "writer": {
                    "writes": self.writes + 1,
                    "seconds": round(self.seconds, 6),
                    "wall_seconds": round(self.wall_seconds, 6),
                },
            }
            try:
                text = json.dumps(doc, indent=1, sort_keys=True, default=_plain)
                atomic_write_text(text + "\n", self.path, durable=False)
            except OSError as err:  # a full disk must not end the run; say it once
                self._warn_once(f"could not write {self.path}: {err}")
                return
            self.writes += 1
            self.seconds += time.thread_time() - cpu0
            self.wall_seconds += time.perf_counter() - began

    def _warn_once(self, message: str) -> None:
        if not self._failed:
            get_logger().warning(message)
        self._failed = True

    def close(self, state: str, **final: Any) -> None:
        """Stops the thread and writes the final snapshot with ``state`` (one of
        :data:`FINAL_STATES`) and ``final``'s figures."""
        self.stop()
        self.state = state
        self.write(state=state, **final)

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the thread; writes nothing more (a run that removes its dir calls this)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)


def _closed(worker: dict[str, Any]) -> dict[str, Any]:
    """A worker row as the run's last snapshot shows it: one still at work is closed now."""
    if worker.get("state") in ("running", "training", "standby", "registered"):
        return {**worker, "state": "closed"}
    return worker


def _plain(value: Any) -> Any:
    """JSON for what ``json`` does not know (numpy or torch scalars): a float, else text."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def read_status(run_path: str | os.PathLike) -> dict[str, Any]:
    """The status.json of ``run_path``, checked whole (see :mod:`.status_schema`).

    Raises:
        FileNotFoundError: the run has not written one (not a run dir, or a run from before
            status.json existed).
        StatusFileError: (a ``ValueError``) the file is not a status document of this
            version: not a plain file, too large, not strict JSON (``NaN`` included), nested
            too deeply, or a field of the wrong type or out of range; the message is one line
            and names the field.
    """
    path = Path(run_path) / STATUS_FILE
    try:
        doc = json.loads(_read_plain_file(path).decode("utf-8"), parse_constant=_no_constant)
        return check_status(doc)
    except FileNotFoundError:
        raise
    except StatusFileError as err:
        raise StatusFileError(f"{path}: {err}") from None
    except OSError as err:
        raise StatusFileError(f"{path}: {err.strerror or err}") from None
    except RecursionError:
        raise StatusFileError(f"{path}: nested too deeply to be a status file") from None
    except ValueError as err:  # not UTF-8, not JSON, a number of over 4,300 digits
        raise StatusFileError(f"{path}: not JSON ({printable(str(err), 120)})") from None


def _read_plain_file(path: Path) -> bytes:
    """The bytes of ``path``, a plain file (not a folder, a link or a pipe: opened without
    blocking and checked before reading) of at most :data:`MAX_STATUS_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise StatusFileError("a link, not the run's own file") from None
        raise
    try:
        if stat.S_ISDIR(mode := os.fstat(fd).st_mode):
            raise StatusFileError("a folder, not a status file")
        if not stat.S_ISREG(mode):
            raise StatusFileError("not a plain file")
        raw = b""
        while len(raw) <= MAX_STATUS_BYTES and (piece := os.read(fd, MAX_STATUS_BYTES + 1)):
            raw += piece
    finally:
        os.close(fd)
    if len(raw) > MAX_STATUS_BYTES:
        raise StatusFileError(f"over {MAX_STATUS_BYTES >> 20} MiB, not a status file")
    return raw


def _no_constant(name: str) -> Any:
    raise StatusFileError(f"JSON has no {name}, not a status file")


def pid_alive(pid: Any) -> bool | None:
    """Whether process ``pid`` of this machine runs (None: cannot tell)."""
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True
