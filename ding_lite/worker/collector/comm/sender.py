"""A collector's end of the ``http`` data plane: rollouts to the learner, policies from it.

Each rollout file the collection loop writes (atomically, in the collector's own
``path_data/<id>/``) is sent, in order, to the learner whose address the coordinator's
tasks carry (``source``); once the learner has it, the local file is deleted and its
metadata goes to the coordinator with the next data task, so the coordinator never names a
file the learner does not hold. While the learner asks to wait (its files of this
collector are not consumed yet), cannot be reached or is being replaced, the file stays and
is sent again; the loop's ``max_pending_files`` then pauses collecting. A file the learner
refuses (it failed a check) is deleted and said so in one line. Policy versions are fetched
into a folder of the collector's own, read, and deleted.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.data.files import policy_file
from ding_lite.utils.errors import DingLiteError

RETRY_S = (0.02, 0.5)  # first and longest wait before a rollout is sent again
MAX_REFUSED = 3  # refusals in a row after which the collector counts as failing
POLICY_LIMIT_BYTES = 1 << 32  # the largest policy file fetched


class DataPlaneSender:
    """Sends a collector's rollout files to the learner and fetches its policy versions.

    Args:
        name: the collector's id.
        connect: ``(address, timeout) -> peer`` with the run's token
            (``slave.files.peer``: a :class:`~ding_lite.interaction.files.FilePeer`).
        on_stored: called with a file's metadata once the learner holds it (its path is
            then the one it has in ``path_data`` on the learner's host).
        own_dir: a folder of this collector's own: rollouts are written to its
            ``rollouts/``, policies fetched into its ``policies/``; removed by :meth:`stop`.
        path_data: the run's ``path_data``, where the learner keeps what it receives.
        timeout: seconds one send or fetch may take without progress.
        logger: the collector's logger.
    """

    def __init__(
        self,
        name: str,
        connect: Callable[[str, Any], Any],
        on_stored: Callable[[dict[str, Any]], None],
        own_dir: Path,
        path_data: Path,
        timeout: float,
        logger: Any,
    ) -> None:
        self.name = name
        self._connect = connect
        self._on_stored = on_stored
        self.own_dir = own_dir
        #: Where the collection loop writes rollouts (``<outgoing>/<name>/``) to be sent.
        self.outgoing = own_dir / "rollouts"
        self.fetch_dir = own_dir / "policies"
        self._path_data = path_data
        self._timeout = (min(3.05, timeout), timeout)
        self._logger = logger
        self._peer: Any = None
        self._address = ""
        self._queue: deque[dict[str, Any]] = deque()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._refused_in_row = 0
        #: Why sending cannot go on (the learner refused MAX_REFUSED files in a row), or "".
        self.error = ""

    def point_at(self, address: str) -> None:
        """Sends to and fetches from the learner at ``address`` (``host:port``) from now on.

        Raises:
            ConfigError: not ``host:port``.
        """
        with self._cond:
            if address == self._address:
                return
            old, self._peer = self._peer, self._connect(address, self._timeout)
            self._address = address
            self._cond.notify_all()
        if old is not None:
            old.close()
            self._logger.info(f"rollouts go to the learner at {address} from now on")

    def submit(self, meta: dict[str, Any]) -> None:
        """Queues a written rollout file (its metadata, as ``write_rollout`` returns it)."""
        with self._cond:
            self._queue.append(meta)
            self._cond.notify_all()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"send-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Stops sending; deletes the files still queued and returns their metadata (with
        the path each would have had on the learner's host)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._cond:
            left, self._queue = list(self._queue), deque()
        for meta in left:
            Path(meta["path"]).unlink(missing_ok=True)
        left = [self._at_learner(meta) for meta in left]
        if self._peer is not None:
            self._peer.close()
        shutil.rmtree(self.own_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.own_dir.parent.rmdir()  # the last collector of the host takes the folder
        return left

    def fetch_policy(self, version: int, limit: int = POLICY_LIMIT_BYTES) -> Path:
        """Fetches policy ``version`` from the learner into :attr:`fetch_dir`; the caller
        reads the file and deletes it.

        Raises:
            DingLiteError: no learner address known yet, or the learner did not serve it
                (not reachable, pruned, an answer whose bytes break the transfer's checks).
        """
        with self._cond:
            peer = self._peer
        if peer is None:
            raise DingLiteError("no learner address known yet to fetch policies from")
        dest = policy_file(self.fetch_dir, version)
        peer.get(f"/data/policy/{version}", dest, limit)
        return dest

    def _at_learner(self, meta: dict[str, Any]) -> dict[str, Any]:
        """A file's metadata with the path it has in ``path_data`` on the learner's host."""
        return {**meta, "path": str(self._path_data / self.name / Path(meta["path"]).name)}

    # --- the sending thread --------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._send_all()
        except Exception as err:  # reported by the next data task; the collector restarts
            self._logger.exception("sending rollouts failed")
            self.error = f"sending rollouts failed: {type(err).__name__}: {err}"

    def _send_all(self) -> None:
        wait = RETRY_S[0]
        while not self._stop.is_set():
            with self._cond:
                if not self._queue or self._peer is None:
                    self._cond.wait(0.2)
                    continue
                meta, peer = self._queue[0], self._peer
            if self._send(meta, peer):
                with self._cond:
                    if self._queue and self._queue[0] is meta:
                        self._queue.popleft()
                wait = RETRY_S[0]
            else:
                self._stop.wait(wait)
                wait = min(wait * 2, RETRY_S[1])

    def _send(self, meta: dict[str, Any], peer: Any) -> bool:
        """Sends one file; True once it is off the queue's hands (held or refused)."""
        path = Path(meta["path"])
        try:
            peer.put(f"/data/rollout/{self.name}/{path.name}", path)
        except FileNotFoundError:
            self._logger.warning(f"rollout {path.name} is gone before it was sent; skipped")
            return True
        except DingLiteError as err:
            if getattr(err, "retryable", False):
                return False  # sent again: one the learner received already is acknowledged
            self._refused_in_row += 1
            self._logger.error(f"the learner refused rollout {path.name}: {err}")
            path.unlink(missing_ok=True)
            if self._refused_in_row >= MAX_REFUSED:
                self.error = f"the learner refused {self._refused_in_row} rollouts in a row"
                self._stop.set()  # the coordinator restarts this collector
            return True
        path.unlink(missing_ok=True)
        self._refused_in_row = 0
        self._on_stored(self._at_learner(meta))
        return True
