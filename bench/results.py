"""A bench's results file: one JSON line per finished run, kept across calls so that a
series of runs can be done in parts (runs already recorded are skipped unless redone)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable
from pathlib import Path


class ResultsFile:
    """The runs recorded in ``path``, each known by ``ident(run)``; :meth:`record` shows a
    finished run with ``show`` and, unless it failed (an ``error`` key), replaces the run
    of the same ident in the file, as it reads then (benches run one after another, or at
    once, keep each other's runs), written whole by a rename. Safe to call from several
    threads."""

    def __init__(
        self,
        path: str | Path,
        ident: Callable[[dict], Hashable],
        show: Callable[[dict], None],
    ) -> None:
        self.path, self.ident, self.show = Path(path), ident, show
        self.recorded: list[dict] = self._read()
        self._lock = threading.Lock()

    def _read(self) -> list[dict]:
        text = self.path.read_text() if self.path.exists() else ""
        return [json.loads(line) for line in text.splitlines()]

    @property
    def done(self) -> set[Hashable]:
        return {self.ident(r) for r in self.recorded}

    def record(self, run: dict) -> None:
        with self._lock:
            self.show(run)
            if "error" in run:
                return
            # Read again: another bench may have recorded runs since this one started.
            self.recorded[:] = [r for r in self._read() if self.ident(r) != self.ident(run)]
            self.recorded.append(run)
            partial = self.path.with_name(self.path.name + ".partial")
            partial.write_text("".join(json.dumps(r) + "\n" for r in self.recorded))
            partial.replace(self.path)
