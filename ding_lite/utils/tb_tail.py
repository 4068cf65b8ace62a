"""Following a run's tensorboard files as they grow (the dashboard, the W&B mirror)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ding_lite.utils.log import EVENT_GLOB, get_logger, read_tb_events_from
from ding_lite.utils.text import printable


class TbTail:
    """Follows every event file under a run's ``tb/`` folder (any depth: a parallel run's
    coordinator and learners) as the writers append to them.

    Each :meth:`read_new` returns the scalars completed since the last call, as
    ``(wall time, step, tag, value)`` sorted by wall time. Links are not followed. A damaged
    record, or a file that cannot be read, is said once to ``warn`` (one line; default: the
    ``ding_lite`` logger's warning) and costs only its own points.
    """

    def __init__(
        self, tb_dir: str | os.PathLike, warn: Callable[[str], None] | None = None
    ) -> None:
        self.tb_dir = Path(tb_dir)
        self.warn = warn or get_logger().warning
        self._offsets: dict[Path, int] = {}
        self._stopped: set[Path] = set()  # a damaged length: nothing more to read there
        self._failing: set[Path] = set()  # unreadable at the last try (said once)

    def read_new(self) -> list[tuple[float, int, str, float]]:
        """The points completed since the last call (never raises for a damaged or
        unreadable file: it is said to ``warn`` and the other files are read)."""
        points: list[tuple[float, int, str, float]] = []
        try:
            paths = sorted(self.tb_dir.rglob(EVENT_GLOB)) if self.tb_dir.is_dir() else []
        except OSError as err:
            self._fail(self.tb_dir, err)
            return points
        self._failing.discard(self.tb_dir)
        for path in paths:
            if path in self._stopped or path.is_symlink() or not path.is_file():
                continue
            try:
                got = read_tb_events_from(path, self._offsets.get(path, 0))
            except OSError as err:
                self._fail(path, err)
                continue
            self._failing.discard(path)
            self._offsets[path] = got.offset
            if got.stopped:
                self._stopped.add(path)
            for line in got.damaged:
                self.warn(printable(line))
            for tag, series in got.scalars.items():
                points.extend((wall, step, tag, value) for step, value, wall in series)
        points.sort(key=lambda p: p[0])
        return points

    def _fail(self, path: Path, err: OSError) -> None:
        if path not in self._failing:
            self.warn(printable(f"cannot read {path}: {err.strerror or err}"))
        self._failing.add(path)
