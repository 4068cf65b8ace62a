"""The rollout ledger: every rollout file the coordinator knows of, and the fate of each.

The filesystem is the queue. A collector reports the files it wrote, and a periodic scan of
``path_data`` adopts complete files nobody reported (a data task whose result was lost, a
collector that died): a file's name says all the coordinator needs (writer, sequence number,
policy version, sample count), so no tensor is ever loaded here. Every file ends in exactly
one ledger entry: trained on, or dropped with a reason.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeGuard

from ding_lite.utils.paths import is_inside, parse_rollout_path, scan_rollouts

OUTCOMES = ("trained", "dropped_stale", "dropped_invalid", "dropped_rollback", "dropped_run_end")
LEDGER_KEYS = ("written", *OUTCOMES, "rejected_links")


def _key(path: str | Path) -> str:
    return os.path.realpath(path)


class RolloutLedger:
    """Rollout files waiting for the learner, files handed to it, and the ledger.

    Args:
        path_data: the run's data folder; a path outside it is never accepted.
        on_reject: called with ``(path, why)`` for a reported path that is not accepted.
        local: the files are on this host (the files plane). On the http plane they are
            on the learner's host: a reported file is taken on its sender's word (sent
            only once the learner holds it), nothing is scanned or deleted here, and the
            learner deletes what is left at the run's end.
    """

    def __init__(
        self,
        path_data: str | Path,
        on_reject: Callable[[str, str], None] | None = None,
        local: bool = True,
    ) -> None:
        self.path_data = Path(path_data)
        self.local = local
        self._on_reject = on_reject
        self._waiting: dict[str, dict[str, Any]] = {}  # path -> metadata
        self._handed: dict[str, dict[str, Any]] = {}  # sent in a learn task, not settled
        self._seen: set[str] = set()  # every path ever accepted (reports and scans agree)
        self._links: set[str] = set()  # symbolic links found in path_data (rejected)
        self.counts = dict.fromkeys(LEDGER_KEYS, 0)
        self.written_by: dict[str, int] = {}  # files accepted, by the collector that wrote them
        #: Samples of the files dropped stale, invalid or rolled back (not at the run's end).
        self.dropped_samples = 0

    # --- arrivals ------------------------------------------------------------------------
    def offer(self, path: Any) -> bool:
        """Accepts a reported file: inside ``path_data``, named as a rollout, new.

        Returns whether it was added (a file already known is not added twice).
        """
        if not isinstance(path, str) or not is_inside(path, self.path_data):
            self._reject(str(path)[:200], "not a path inside path_data")
            return False
        meta = parse_rollout_path(path)
        if meta is None:
            self._reject(path, "not a rollout file name")
            return False
        if self.local and not os.path.isfile(path):
            # Already consumed (adopted by a scan, trained on) or never written.
            if _key(path) not in self._seen:
                self._reject(path, "no such file")
            return False
        return self._add(meta)

    def offer_all(self, paths: Iterable[Any]) -> int:
        return sum(self.offer(p) for p in paths)

    def adopt(self, min_age: float = 0.0) -> int:
        """Adds the complete rollout files in ``path_data`` the queue does not know yet.

        Args:
            min_age: only files written at least this many seconds ago (a fresh file's
                report is usually on its way; the report is the cheaper path).
        """
        if not self.local:
            return 0
        newest = time.time() - min_age
        links: list[str] = []
        found = scan_rollouts(self.path_data, links)
        for link in links:  # never followed, never queued: counted once and said
            if link not in self._links:
                self._links.add(link)
                self.counts["rejected_links"] += 1
                self._reject(link, "a symbolic link in path_data (never followed)")
        return sum(self._add(meta) for meta in found if meta["created"] <= newest)

    def _add(self, meta: Any) -> bool:
        meta = dict(meta) if not isinstance(meta, dict) else meta
        key = _key(meta["path"])
        if key in self._seen:
            return False
        self._seen.add(key)
        self.counts["written"] += 1
        self.written_by[meta["collector"]] = self.written_by.get(meta["collector"], 0) + 1
        self._waiting[key] = meta
        return True

    def _reject(self, path: str, why: str) -> None:
        if self._on_reject is not None:
            self._on_reject(path, why)

    # --- hand-over -----------------------------------------------------------------------
    @property
    def samples(self) -> int:
        """Samples waiting to be handed to the learner."""
        return sum(int(m["size"]) for m in self._waiting.values())

    def waiting(self) -> list[dict[str, Any]]:
        return list(self._waiting.values())

    def take(self, demand: int, min_version: int) -> list[dict[str, Any]]:
        """Hands out the freshest files up to ``demand`` samples, plus every file older than
        ``min_version`` (the learner drops those and says so)."""
        fresh = sorted(self._waiting.items(), key=lambda kv: -int(kv[1]["policy_version"]))
        chosen, samples = [], 0
        for key, meta in fresh:
            if int(meta["policy_version"]) < min_version or samples < demand:
                chosen.append(key)
                if int(meta["policy_version"]) >= min_version:
                    samples += int(meta["size"])
        return [self._hand(key) for key in chosen]

    def take_all(self) -> list[dict[str, Any]]:
        return [self._hand(key) for key in list(self._waiting)]

    def _hand(self, key: str) -> dict[str, Any]:
        meta = self._waiting.pop(key)
        self._handed[key] = meta
        return meta

    def settle(self, outcome: dict[str, Any]) -> None:
        """Books the learner's verdict on handed files (``{"trained": [paths], ...}``).

        A handed file the verdict does not name goes back to the queue if it still exists
        (it was not consumed), else counts as invalid.
        """
        for name in OUTCOMES:
            for path in outcome.get(name) or []:
                meta = self._handed.pop(_key(path), None) if isinstance(path, str) else None
                if meta is not None:
                    self.counts[name] += 1
                    if name not in ("trained", "dropped_run_end"):
                        self.dropped_samples += int(meta["size"])
        self.give_back(missing_as="dropped_invalid")

    def give_back(self, missing_as: str = "dropped_rollback") -> None:
        """Returns unsettled handed files to the queue (e.g. the learner was lost mid-task).

        Files that no longer exist were consumed by the learner that failed: their
        iteration is lost, so they count as ``missing_as``. On the http plane this host
        cannot look: every one goes back, and a learner that lacks it says so when it is
        named again (``dropped_invalid``).
        """
        for key, meta in list(self._handed.items()):
            del self._handed[key]
            if not self.local or os.path.exists(key):
                self._waiting[key] = meta
            else:
                self.counts[missing_as] += 1

    def drop_missing(self) -> None:
        """Files waiting whose file vanished (deleted outside the protocol) count as invalid."""
        if not self.local:
            return
        for key in [k for k in self._waiting if not os.path.exists(k)]:
            del self._waiting[key]
            self.counts["dropped_invalid"] += 1

    def discard_rest(self) -> None:
        """At the end of a run: deletes every file still waiting or handed (none will be
        trained on) and books it as ``dropped_run_end``."""
        self.give_back(missing_as="dropped_run_end")
        for key in list(self._waiting):
            del self._waiting[key]
            if self.local and is_inside(key, self.path_data):
                try:
                    os.unlink(key)
                except FileNotFoundError:
                    pass
            self.counts["dropped_run_end"] += 1

    # --- recovery ------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What a restarted coordinator needs of the ledger (see :meth:`restore`)."""
        return {
            "counts": dict(self.counts),
            "written_by": dict(self.written_by),
            "dropped_samples": self.dropped_samples,
            "links": sorted(self._links),
            "waiting": [dict(m) for m in self._waiting.values()],
            "handed": [dict(m) for m in self._handed.values()],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Takes back a saved :meth:`state` (checked first: nothing changes if it raises).

        A waiting file that is gone was deleted outside the protocol (counted invalid, as
        :meth:`drop_missing` does); handed files stay handed until the learner's verdict
        (or :meth:`give_back`). Files on disk the state does not name are new: the next
        :meth:`adopt` counts them.

        Raises:
            ValueError: a count is not a count, or a path is not a rollout inside
                ``path_data``.
        """
        counts, by = state.get("counts"), state.get("written_by")
        if not isinstance(counts, dict) or set(counts) != set(LEDGER_KEYS):
            raise ValueError(f"ledger counts must have the keys {', '.join(LEDGER_KEYS)}")
        if not isinstance(by, dict) or not all(map(_is_count, [*counts.values(), *by.values()])):
            raise ValueError("ledger counts must be non-negative ints")
        dropped = state.get("dropped_samples")
        if not _is_count(dropped):
            raise ValueError("dropped_samples must be a non-negative int")
        waiting = [self._checked(m) for m in state.get("waiting") or []]
        handed = [self._checked(m) for m in state.get("handed") or []]
        links = state.get("links") or []
        if not isinstance(links, list) or not all(isinstance(x, str) for x in links):
            raise ValueError("links must be a list of paths")
        self.counts, self.written_by, self.dropped_samples = dict(counts), dict(by), dropped
        self._links = set(links)
        for meta in waiting + handed:
            self._seen.add(_key(meta["path"]))
        for meta in handed:
            self._handed[_key(meta["path"])] = meta
        for meta in waiting:
            self._waiting[_key(meta["path"])] = meta
        self.drop_missing()

    def _checked(self, meta: Any) -> dict[str, Any]:
        path = meta.get("path") if isinstance(meta, dict) else None
        parsed = parse_rollout_path(path) if isinstance(path, str) else None
        if parsed is None or not isinstance(path, str) or not is_inside(path, self.path_data):
            raise ValueError(f"not a rollout file inside path_data: {str(path)[:200]!r}")
        return dict(parsed)

    # --- the ledger ----------------------------------------------------------------------
    def ledger(self, left: int | None = None) -> dict[str, int]:
        """The counts, with ``left_in_path_data``: complete rollout files still on disk
        (``left``: as the learner counted them in its own ``path_data``; else counted
        here)."""
        if left is None:
            left = len(scan_rollouts(self.path_data)) if self.path_data.is_dir() else 0
        return {**self.counts, "left_in_path_data": left}

    def live(self) -> dict[str, int]:
        """The counts while the run goes on (no folder scan): with the files ``waiting`` for
        the learner and those ``in_learner`` (handed over, no verdict yet)."""
        return {**self.counts, "waiting": len(self._waiting), "in_learner": len(self._handed)}

    @property
    def dropped(self) -> int:
        return sum(v for k, v in self.counts.items() if k.startswith("dropped_"))


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
