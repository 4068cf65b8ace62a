"""The run's home on the http data plane: the learner's checkpoints kept where the run is.

With ``system.data_plane: http`` the learner may run on a host that shares no folder with
the coordinator's. It sends every checkpoint it writes (``ckpt_iter<N>.pt``, ``best.pt``)
to ``PUT /run/ckpt/<name>`` on the coordinator's server, which keeps them in the run dir's
``ckpt/`` (the newest ``learner.keep_ckpts`` periodic ones), so ``--resume``, ``ding-lite
status`` and a replacement learner on any host work from here: a learner started to resume
is told the names to fetch from ``GET /run/ckpt/<name>``. Its tensorboard event files come
the same way (``PUT /run/tb/<worker id>/<file>``, into ``tb/<worker id>/``), so ``plot``
and tensorboard read the whole run at home.

Torch-free, like the rest of the coordinator: a file must carry a checkpoint's name and the
zip signature torch writes; what is inside is checked by the learner that loads it
(``weights_only``), as for any checkpoint on disk.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ding_lite.utils.paths import BEST_CKPT, CKPT_GLOB, is_worker_id, parse_ckpt_name

CKPT_ROUTE = "/run/ckpt/<name>"
TB_ROUTE = "/run/tb/<worker>/<name>"
_TB_NAME = re.compile(r"^events\.out\.tfevents\.[A-Za-z0-9._-]{1,200}$")
_ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format is a zip archive


class RunHome:
    """Receives and serves the run's checkpoints (see the module).

    Args:
        files: the master's :class:`~ding_lite.interaction.files.FilePlane`.
        ckpt_dir: the run dir's ``ckpt/``.
        keep: periodic checkpoints kept (``learner.keep_ckpts``).
        limit: the largest checkpoint accepted, in bytes.
        logger: the coordinator's logger.
    """

    def __init__(self, files: Any, ckpt_dir: Path, keep: int, limit: int, logger: Any) -> None:
        self.ckpt_dir = ckpt_dir
        self._keep = keep
        self._logger = logger
        files.serve_put(CKPT_ROUTE, self._put, limit)
        files.serve_get(CKPT_ROUTE, self._locate)
        files.serve_put(TB_ROUTE, self._put_tb, limit)

    def _put(self, receive: Any, name: str) -> dict[str, Any]:
        dest = self._path(name)
        with receive(dest) as temp:
            with open(temp, "rb") as f:
                if f.read(len(_ZIP_MAGIC)) != _ZIP_MAGIC:
                    raise ValueError(f"{name} is not a checkpoint written by torch.save")
            os.replace(temp, dest)
        self._rotate()
        return {"stored": True}

    def _put_tb(self, receive: Any, worker: str, name: str) -> dict[str, Any]:
        if not is_worker_id(worker) or not _TB_NAME.match(name):
            raise ValueError(f"{worker[:80]}/{name[:80]} is not a tensorboard event file")
        dest = self.ckpt_dir.parent / "tb" / worker / name
        with receive(dest) as temp:
            os.replace(temp, dest)
        return {"stored": True}

    def _locate(self, name: str) -> Path:
        path = self._path(name)
        if not path.is_file():
            raise FileNotFoundError(f"no checkpoint {name} in the run's home")
        return path

    def _path(self, name: str) -> Path:
        if name != BEST_CKPT and parse_ckpt_name(name) is None:
            raise ValueError(f"{name[:80]!r} is not a checkpoint name (ckpt_iter<N>.pt, best.pt)")
        return self.ckpt_dir / name

    def _rotate(self) -> None:
        periodic = [name for name in home_checkpoints(self.ckpt_dir) if name != BEST_CKPT]
        for name in periodic[self._keep :]:
            (self.ckpt_dir / name).unlink(missing_ok=True)


def home_checkpoints(ckpt_dir: Path) -> list[str]:
    """The checkpoints a learner resuming on another host fetches: periodic ones newest
    first, then ``best.pt`` if there is one."""
    found = sorted(
        (n, p.name) for p in ckpt_dir.glob(CKPT_GLOB) if (n := parse_ckpt_name(p.name)) is not None
    )
    names = [name for _, name in reversed(found)]
    return names + ([BEST_CKPT] if (ckpt_dir / BEST_CKPT).is_file() else [])
