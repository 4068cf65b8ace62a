"""AsyncCollector: keeps a vector env stepping in a thread, one file per rollout.

The loop never waits for the coordinator: it collects a rollout (with advantages from the
behaviour policy's values), writes it atomically under ``<path_data>/<name>/`` and records its
metadata in an outbox that ``drain()`` empties. New weights handed to ``sync_policy()`` are
swapped in right before the next rollout, so the env never pauses for a policy update.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.data.files import read_policy_sheet, write_rollout
from ding_lite.utils.log import get_logger
from ding_lite.worker.collector.serial_collector import SerialCollector


class AsyncCollector:
    """Runs ``collector.collect()`` in a background thread and writes every rollout to a file.

    Args:
        collector: the rollout collector (env + the policy's collect mode).
        policy: the policy whose weights ``sync_policy`` replaces.
        name: this collector's id; its files go to ``<path_data>/<name>/``.
        path_data: the shared data folder.
        max_pending_files: the loop pauses while this many of its files are not yet consumed
            (still on disk): collecting further ahead of the learner only makes stale data,
            and a stalled learner cannot fill the disk.
        on_policy: called in the loop thread with the new version once the first rollout
            collected with it is written (e.g. to evaluate it); a dict it returns is
            reported by ``drain()`` under "evals".
        report_first: also call ``on_policy`` once the first rollout is written, with the
            policy the collector started with (``evaluator.before_train``).
        sync: synchronous collection (``system.sync_collect``): after each rollout the loop
            waits for a policy version newer than the one it collected with, so every
            rollout is collected by the newest policy (a rollback lifts the wait).
        out_of_reach: the loop pauses while this returns a reason (the coordinator has not
            answered for a while: its policies cannot arrive, so rollouts would only go
            stale, and a run that ended meanwhile would find files written after its close).
        deliver: takes each written file's metadata instead of the outbox (the http data
            plane sends it to the learner first, then hands it to :meth:`report_file`).
        league: a league's seating of the env's copies (a
            :class:`~ding_lite.worker.collector.league_pool.SheetSeating`): it follows the
            draw sheet of each policy swapped in, and each rollout file carries the matches
            that ended in it.
    """

    def __init__(
        self,
        collector: SerialCollector,
        policy: Any,
        *,
        name: str,
        path_data: str | Path,
        max_pending_files: int = 16,
        on_policy: Any = None,
        report_first: bool = False,
        sync: bool = False,
        out_of_reach: Callable[[], str] | None = None,
        deliver: Callable[[dict[str, Any]], None] | None = None,
        league: Any = None,
    ) -> None:
        self.collector = collector
        # A stream of its own, so that a learner holding back unfinished episodes tells this
        # collector's rollouts (and a restarted one's) from every other's.
        collector.stream = secrets.randbelow(2**31)
        self.policy = policy
        self.name = name
        self.path_data = Path(path_data)
        self.max_pending_files = max_pending_files
        self.policy_version = 0
        self._seq = 0
        self._lock = threading.Lock()
        self._outbox: list[dict[str, Any]] = []
        self._unconsumed: list[Path] = []  # written files the learner has not deleted yet
        self._returns: list[float] = []
        self._outcomes: list[float] = []
        self._pending_policy: tuple[int, dict[str, Any], float, Any] | None = None
        self.league = league
        self._sync_latency: list[float] = []
        self._evals: list[dict[str, Any]] = []
        self._on_policy = on_policy
        self._report_first = report_first  # on_policy after the first rollout, swapped or not
        self.sync = sync
        self._collected_with: int | None = None  # sync: the version of the last rollout
        self._pending_rollback = False
        self._loaded_any = False  # a published policy replaced the built one's weights
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._out_of_reach = out_of_reach or (lambda: "")
        self._deliver = deliver
        self._held = ""  # why the loop is paused for the coordinator ("" while it is not)
        self._thread: threading.Thread | None = None
        self._logger = get_logger(f"collector.{name}")

    def start(self) -> None:
        """Starts the collection thread."""
        self._thread = threading.Thread(target=self._run, name=f"collect-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stops after the rollout in progress (waits at most ``timeout`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._logger.warning(f"collection thread still busy after {timeout:g} s")

    def sync_policy(
        self,
        path: str,
        version: int,
        published_at: float | None = None,
        rollback: bool = False,
    ) -> None:
        """Reads a published policy file; the loop uses it from its next rollout on.

        Args:
            path: the policy file.
            version: its version; one not newer than the current (or pending) one is
                ignored, unless ``rollback`` or no policy was loaded yet (the first one,
                version 0 included, replaces the weights the collector was built with).
            published_at: ``time.time()`` of publication, to measure the sync latency.
            rollback: the learner restarted from an older checkpoint: this version replaces
                whatever the loop holds, and newer versions follow from it.

        Raises:
            CheckpointError: the file of a version it would use is missing or unreadable.
        """
        if not self.wants(version, rollback):
            return  # a late sync (e.g. delivered after a cut link): its file may be gone
        file_version, state, sheet = read_policy_sheet(path)
        if file_version != version:
            raise ValueError(f"{path} holds policy version {file_version}, not {version}")
        with self._lock:
            pending = self._pending_policy
            newest = pending[0] if pending is not None else self.policy_version
            first = pending is None and not self._loaded_any
            if rollback or version > newest or first:
                self._pending_policy = (version, state, published_at or time.time(), sheet)
            if rollback:
                self._pending_rollback = True  # sync: goes ahead whatever its version

    def wants(self, version: int, rollback: bool = False) -> bool:
        """Whether :meth:`sync_policy` would use ``version`` (else it ignores it unread)."""
        with self._lock:
            pending = self._pending_policy
            newest = pending[0] if pending is not None else self.policy_version
            return rollback or not self._loaded_any or version > newest

    def report_file(self, meta: dict[str, Any]) -> None:
        """Puts a delivered file's metadata in the outbox (see ``deliver``)."""
        with self._lock:
            self._outbox.append(meta)

    def drain(self) -> dict[str, Any]:
        """Returns what was collected since the last call.

        Returns:
            ``{"files": [metadata...], "episode_returns": [...], "episode_outcomes": [...]
            (empty unless the env reports outcomes), "envstep", "policy_version",
            "sync_latency_s": [...], "evals": [...]}``.

        Raises:
            The exception that stopped the collection thread, if any.
        """
        with self._lock:
            if self._error is not None:
                raise RuntimeError(
                    f"collector {self.name} failed: {self._error!r}"
                ) from self._error
            files, self._outbox = self._outbox, []
            returns, self._returns = self._returns, []
            outcomes, self._outcomes = self._outcomes, []
            latency, self._sync_latency = self._sync_latency, []
            evals, self._evals = self._evals, []
            return {
                "files": files,
                "episode_returns": returns,
                "episode_outcomes": outcomes,
                "envstep": self.collector.envstep,
                "policy_version": self.policy_version,
                "sync_latency_s": latency,
                "evals": evals,
            }

    @property
    def files_written(self) -> int:
        """Rollout files this loop wrote."""
        return self._seq

    def give_back(self, out: dict[str, Any]) -> None:
        """Puts a drained output the coordinator never received back in front of what came
        since, so the next :meth:`drain` reports it (files, episodes, evaluations)."""
        with self._lock:
            self._outbox[:0] = list(out.get("files") or [])
            self._returns[:0] = list(out.get("episode_returns") or [])
            self._outcomes[:0] = list(out.get("episode_outcomes") or [])
            self._sync_latency[:0] = list(out.get("sync_latency_s") or [])
            self._evals[:0] = list(out.get("evals") or [])

    def set_on_policy(self, on_policy: Any) -> None:
        """Sets the callback run after each policy swap (see the class arguments)."""
        self._on_policy = on_policy

    def apply_pending_policy(self) -> None:
        """Swaps in a policy that arrived after the loop's last rollout (call after stop())."""
        if self.alive:
            raise RuntimeError("apply_pending_policy() is for a stopped collector")
        # No rollout acts with it, so its wait is no policy-sync latency.
        if self._swap_policy(record_latency=False):
            self._report_on_policy()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _swap_policy(self, *, record_latency: bool = True) -> bool:
        """Loads the pending policy, if any; returns whether it did."""
        with self._lock:
            pending, self._pending_policy = self._pending_policy, None
            self._pending_rollback = False
        if pending is None:
            return False
        version, state, published_at, sheet = pending
        self.policy.collect_mode.load_state_dict({"model": state})
        if self.league is not None:
            self.league.follow(sheet)
        self.policy_version, self._loaded_any = version, True
        if record_latency:
            with self._lock:
                self._sync_latency.append(max(time.time() - published_at, 0.0))
        return True

    def _awaits_policy(self) -> bool:
        """Synchronous collection: whether the next rollout waits for a newer version."""
        if not self.sync or self._collected_with is None:
            return False
        with self._lock:
            pending, rollback = self._pending_policy, self._pending_rollback
        return pending is None or (pending[0] <= self._collected_with and not rollback)

    def _report_on_policy(self) -> None:
        """Runs the ``on_policy`` callback for the current version (e.g. an evaluation)."""
        if self._on_policy is not None:
            report = self._on_policy(self.policy_version)
            if report is not None:
                with self._lock:
                    self._evals.append(report)

    def _hold(self) -> bool:
        """Whether the coordinator is out of reach; says so when that starts and ends."""
        why = self._out_of_reach()
        if why and not self._held:
            self._logger.warning(f"collection paused: {why}")
        elif self._held and not why:
            self._logger.warning("collection goes on: the coordinator answers again")
        self._held = why
        return bool(why)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._unconsumed = [p for p in self._unconsumed if p.exists()]
                if len(self._unconsumed) >= self.max_pending_files or self._awaits_policy():
                    self._stop.wait(0.002)
                    continue
                if self._hold():
                    self._stop.wait(0.05)
                    continue
                # Swapped in right before the rollout that acts with it, not while paused: a
                # pause ends when the learner takes the files, so the work runs beside its
                # update instead of beside the coordinator's next task. The callback (an
                # evaluation) waits until that rollout is written, so it never holds up the
                # data the learner needs next.
                swapped = self._swap_policy()
                data = self.collector.collect()
                meta = write_rollout(
                    self.path_data,
                    self.name,
                    self._seq,
                    data,
                    policy_version=self.policy_version,
                    episode_returns=self.collector.last_returns,
                    league_matches=self.league.drain() if self.league is not None else None,
                )
                self._seq += 1
                if self.sync:
                    self._collected_with = self.policy_version
                self._unconsumed.append(Path(meta["path"]))
                if self._deliver is not None:
                    self._deliver(meta)
                with self._lock:
                    if self._deliver is None:
                        self._outbox.append(meta)
                    self._returns.extend(self.collector.last_returns)
                    self._outcomes.extend(self.collector.last_outcomes)
                first = self._seq == 1 and self._report_first
                if (swapped or first) and not self._stop.is_set():  # a closing run evaluates
                    self._report_on_policy()
        except BaseException as err:  # reported to the coordinator by the next drain()
            self._logger.exception("collection thread failed")
            with self._lock:
                self._error = err
