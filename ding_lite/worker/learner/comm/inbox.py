"""The learner's end of the ``http`` data plane: rollouts in, policy versions out.

With ``system.data_plane: http`` no folder is shared between hosts. A collector sends each
rollout file it wrote to ``PUT /data/rollout/<collector>/<file name>`` on the learner's own
server, and fetches each policy version from ``GET /data/policy/<version>``. The learner
keeps what it receives in its own ``path_data``, under the name it had, so the coordinator's
ledger, the learn tasks and the tidying see the same files as on the ``files`` plane.

A rollout is kept only when every check holds, else nothing of it is: the token (the app's),
the collector id and the file name (no path may hide in either), the body's length (413
over ``system.max_rollout_bytes``, on its declared length), its digest, and its content, read
with ``weights_only`` and validated against the run's spec as a learn task would. One sent
again (a retry after a lost answer) is acknowledged and not stored twice. A collector with
``system.max_pending_files`` files waiting here is told to wait (429): a learner that
cannot keep up makes collectors wait instead of filling its disk.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.data.files import policy_file
from ding_lite.data.spec import RolloutSpec
from ding_lite.utils.errors import TryLater
from ding_lite.utils.paths import (
    UnsafePathError,
    is_worker_id,
    parse_rollout_path,
    resolve_inside,
    scan_rollouts,
)
from ding_lite.worker.learner.comm.intake import one_line, read_checked

ROLLOUT_ROUTE = "/data/rollout/<collector>/<path:name>"
POLICY_ROUTE = "/data/policy/<int:version>"
# The rollout limit until a run's config sets its own (nothing is received before).
RECEIVE_CAP_BYTES = 1 << 20
_REMEMBERED = 65_536  # names of rollouts received, to acknowledge one sent again


@dataclass(frozen=True)
class _Run:
    """What the inbox checks against, from the learner's start task on."""

    path_data: Path
    path_policy: Path
    spec: RolloutSpec
    max_pending: int


class Inbox:
    """Serves the data plane's routes on a learner's server.

    Args:
        files: the learner's :class:`~ding_lite.interaction.files.FilePlane` (``slave.files``;
            None: a learner without a server, which serves nothing).
        logger: the learner's logger.
    """

    def __init__(self, files: Any, logger: Any) -> None:
        self._files = files
        self._logger = logger
        self._run: _Run | None = None
        self._lock = threading.Lock()
        self._received: OrderedDict[str, None] = OrderedDict()  # "<collector>/<name>"
        self._receiving: set[str] = set()
        if files is not None:
            files.serve_put(ROLLOUT_ROUTE, self._put_rollout, RECEIVE_CAP_BYTES)
            files.serve_get(POLICY_ROUTE, self._policy)

    def open(self, cfg: Any, path_data: Path, path_policy: Path, spec: RolloutSpec) -> None:
        """Receives rollouts for the run ``cfg`` from now on, if its plane is http."""
        if self._files is None or cfg.system.data_plane != "http":
            return
        self._files.limit(ROLLOUT_ROUTE, int(cfg.system.max_rollout_bytes))
        with self._lock:
            self._run = _Run(path_data, path_policy, spec, int(cfg.system.max_pending_files))

    def holding(self) -> list[str]:
        """The rollout files received and not yet trained on (their paths in ``path_data``),
        for the coordinator's ledger: one whose sender never reported it (it died after
        sending) is known all the same. Empty unless a run on the http plane is open."""
        run = self._run
        if run is None:
            return []
        return [meta["path"] for meta in scan_rollouts(run.path_data)]

    def close(self) -> list[str]:
        """Refuses rollouts from now on (the run ended); deletes those it still holds (the
        coordinator discarded what it knew of; any other arrived after its last look) and
        returns their paths, for the ledger."""
        with self._lock:
            run, self._run = self._run, None
        if run is None:
            return []
        held = [meta["path"] for meta in scan_rollouts(run.path_data)]
        for path in held:
            Path(path).unlink(missing_ok=True)
        return held

    # --- routes --------------------------------------------------------------------------
    def _put_rollout(self, receive: Any, collector: str, name: str) -> dict[str, Any]:
        run = self._require_run()
        dest = _rollout_path(run, collector, name)
        key = f"{collector}/{name}"
        with self._lock:
            if key in self._received or dest.is_file():
                return {"stored": False, "received_before": True}
            if key in self._receiving:
                raise TryLater(f"rollout {key} is being received; send it again later")
            # Complete files and those being received (a collector sending several at once).
            waiting = _waiting(dest.parent) + sum(
                k.startswith(f"{collector}/") for k in self._receiving
            )
            if waiting >= run.max_pending:
                raise TryLater(
                    f"{waiting} rollout(s) of {collector} wait to be trained on "
                    f"(system.max_pending_files={run.max_pending}); send it again later"
                )
            self._receiving.add(key)
        try:
            with receive(dest) as temp:
                try:
                    read_checked(temp, run.spec, given=key, named=dest)
                except Exception as err:  # a bad rollout is refused, never fatal
                    why = one_line(err).replace(str(temp), key)  # (not the temp file's name)
                    self._logger.warning(f"refused rollout {key} from the data plane: {why}")
                    raise ValueError(f"not a valid rollout: {why}") from None
                os.replace(temp, dest)
            with self._lock:
                self._received[key] = None
                while len(self._received) > _REMEMBERED:
                    self._received.popitem(last=False)
        finally:
            with self._lock:
                self._receiving.discard(key)
        return {"stored": True, "received_before": False}

    def _policy(self, version: int) -> Path:
        path = policy_file(self._require_run().path_policy, version)
        if not path.is_file():
            raise FileNotFoundError(f"policy version {version} is not published here (pruned?)")
        return path

    def _require_run(self) -> _Run:
        run = self._run
        if run is None:
            raise TryLater("the learner has no run yet; send it again later")
        return run


def _rollout_path(run: _Run, collector: str, name: str) -> Path:
    """Where a received rollout goes: ``<path_data>/<collector>/<name>``.

    Raises:
        ValueError: a collector id or a file name that could name anything else.
    """
    if not is_worker_id(collector):
        raise ValueError(f"collector id {collector[:80]!r} cannot name a folder")
    if "/" in name or parse_rollout_path(Path(collector, name)) is None:
        raise ValueError(
            f"{name[:80]!r} is not a rollout file name (<seq>_v<version>_n<samples>.pt)"
        )
    try:
        return resolve_inside(run.path_data / collector / name, run.path_data)
    except UnsafePathError as err:  # e.g. the collector's folder is a symbolic link
        raise ValueError(str(err)) from None


def _waiting(folder: Path) -> int:
    """Complete rollout files in ``folder`` (a collector's: received, not yet trained on)."""
    try:
        return sum(1 for p in folder.iterdir() if parse_rollout_path(p) is not None)
    except FileNotFoundError:
        return 0
