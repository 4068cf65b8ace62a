"""The one transport of the coordinator's tests: workers that answer in this process.

A worker is either real (a :class:`FlaskFileSystemLearner` or :class:`FlaskFileSystemCollector`
whose handlers are called directly) or scripted: :class:`ScriptedTransport` answers its tasks
from a script, writing and deleting (empty) rollout files as collectors and a learner would,
so a test checks the coordinator's side of the protocol (order of tasks, demand, timeouts,
stops, ledger) in a fraction of a second. Every task sent is recorded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

from ding_lite.config import compile_config
from ding_lite.coordinator import Coordinator, RunStatus
from ding_lite.coordinator.ledger import OUTCOMES
from ding_lite.interaction.protocol import WORKER_LOST
from ding_lite.utils import stop
from ding_lite.utils.paths import rollout_name
from ding_lite.worker.collector.comm import FlaskFileSystemCollector
from ding_lite.worker.learner.comm import FlaskFileSystemLearner

ROLLOUT = 32  # samples per scripted rollout
MAX_CALLS = 20_000  # a script that never ends is stopped as stalled after this many tasks


class Call(NamedTuple):
    """One task the coordinator sent."""

    worker: str
    name: str
    data: dict
    timeout: float


def outcome(success: bool = True, result: dict | None = None, error: str = "") -> Any:
    """A task's outcome as the HTTP transport reports it."""
    return SimpleNamespace(success=success, result=result or {}, error=error, elapsed_s=0.0)


def make_workers(n_collectors: int = 2) -> dict[str, tuple[str, Any]]:
    """Real workers, ``{id: (role, worker)}``: learner0 and collector0..n-1."""
    workers = {"learner0": ("learner", FlaskFileSystemLearner(worker_id="learner0"))}
    for i in range(n_collectors):
        cid = f"collector{i}"
        workers[cid] = ("collector", FlaskFileSystemCollector(worker_id=cid))
    return workers


class ScriptedTransport:
    """A learner and collectors that answer in this process; records every task sent.

    A scripted collector writes one rollout file and reports it, then waits until a learn
    task has taken it, as a collector with ``system.max_pending_files`` 1 does.

    Args:
        root: the run dir (``<root>/data``, ``<root>/policy``).
        collectors: ids of the scripted collectors.
        learners: ids of the scripted learners.
        iters: the scripted learner is done after this many iterations.
        script: ``learner_batch`` (the get_data answer's batch size), ``fail_start``
            (worker -> the error of its start task), ``silent`` (collectors that never
            collect), ``unreported`` (write files, report none), ``done_reason``,
            ``resume_version`` (the version a resumed learner starts at), ``cut_off_at``
            (``(learner, iteration)``: see below).
    """

    def __init__(
        self,
        root: Path,
        collectors: tuple[str, ...] | list[str] = (),
        *,
        learners: tuple[str, ...] = ("learner0",),
        iters: int = 3,
        **script: Any,
    ) -> None:
        self.path_data, self.path_policy = Path(root) / "data", Path(root) / "policy"
        self.ids = {"learner": list(learners), "collector": list(collectors)}
        self.real: dict[str, Any] = {}  # worker id -> a real worker, its handlers answer
        self.addresses: dict[str, str] = {}
        self.iters = iters
        self.learner_batch = script.get("learner_batch")
        self.fail_start = dict(script.get("fail_start", {}))
        self.silent = set(script.get("silent", ()))
        self.unreported = set(script.get("unreported", ()))
        self.done_reason = script.get("done_reason", "max_train_iter")
        self.resume_version = script.get("resume_version", 0)
        self.extra: dict[str, dict] = {}  # worker -> fields of its next result with no file
        self.forged: dict[str, list] = {}  # worker -> paths to add to its next data result
        self.calls: list[Call] = []
        self.iteration, self.seq = 0, 0
        self.pending: set[str] = set()
        self.after_learn: Callable[[ScriptedTransport], None] | None = None
        # (learner, iteration): its answer to the learn task that reaches that iteration
        # never arrives (the worker is declared lost); it registers again a moment later.
        self.cut_off_at: tuple[str, int] | None = script.get("cut_off_at")
        self._back_in = 0  # worker_ids calls until the cut-off learner registers again
        self._cut_off = ""
        self.answers: dict[str, dict] = {}  # the scripted learner's answers by batch id
        self.started: set[str] = set()  # learners started and not closed
        self.coordinator: Coordinator | None = None

    @classmethod
    def of_workers(cls, root: Path, workers: dict[str, tuple[str, Any]]) -> ScriptedTransport:
        """A transport to real workers only, ``{id: (role, worker)}``."""
        transport = cls(root, learners=())
        for worker_id, (role, worker) in workers.items():
            transport.ids[role].append(worker_id)
            transport.real[worker_id] = worker
        return transport

    def lose(self, worker_id: str) -> None:
        """The worker vanishes from the registry, as one whose heartbeats stopped."""
        for ids in self.ids.values():
            if worker_id in ids:
                ids.remove(worker_id)

    # the transport
    def worker_ids(self, role: str) -> list[str]:
        if self._back_in and role == "learner":
            self._back_in -= 1
            if not self._back_in:
                self.ids["learner"].append(self._cut_off)
        return list(self.ids[role])

    def workers(self, role: str | None = None) -> list[SimpleNamespace]:
        """One address per id, never changing."""
        return [
            SimpleNamespace(worker_id=w, role=r, address=self._address(w))
            for r in ([role] if role else list(self.ids))
            for w in self.ids[r]
        ]

    def _address(self, worker_id: str) -> str:
        return self.addresses.setdefault(worker_id, f"127.0.0.1:{10000 + len(self.addresses)}")

    def send_task(self, worker: str, name: str, data: dict, timeout: float) -> Any:
        self.calls.append(Call(worker, name, data, timeout))
        if len(self.calls) > MAX_CALLS and self.coordinator is not None:
            self.coordinator.request_stop(stop.STALLED)
        if name.endswith("_start_task") and worker in self.fail_start:
            return outcome(False, error=self.fail_start[worker])
        if worker in self.real:
            try:
                result = self.real[worker].handlers[name](data)
            except Exception as err:  # the transport reports failures, like the HTTP one
                return outcome(False, error=f"{type(err).__name__}: {err}")
        else:
            result = getattr(self, name)(worker, data)
        if name == "learner_learn_task" and self.after_learn is not None:
            self.after_learn(self)
        if name == "learner_learn_task" and self.cut_off_at == (worker, self.iteration):
            self.lose(worker)
            self.cut_off_at, self._cut_off, self._back_in = None, worker, 5  # once
            return outcome(False, error=WORKER_LOST)
        return outcome(True, result)

    def send_task_async(self, worker: str, name: str, data: dict, timeout: float) -> Future:
        future: Future = Future()
        future.set_result(self.send_task(worker, name, data, timeout))
        return future

    # the scripted learner
    def learner_start_task(self, worker: str, data: dict) -> dict:
        if worker in self.started and data.get("take_back"):  # still training: where it is
            it = self.iteration
            return {**self._policy(it), "envstep": 0, "batch_size": self.start_batch,
                    "checkpoint": None, "running": True}  # fmt: skip
        self.started.add(worker)
        resumed = bool(data["config"]["learner"].get("load_path"))
        self.iteration = self.resume_version if resumed else 0
        self.start_batch = ROLLOUT * data["config"]["system"]["collectors"]
        return {
            "policy_path": str(self.path_policy / f"policy_v{self.iteration:08d}.pt"),
            "policy_version": self.iteration,
            "resumed_from": self.iteration if resumed else None,
            "checkpoint": f"ckpt_iter{self.iteration:08d}.pt" if resumed else None,
            "envstep": 0,
            "batch_size": self.start_batch,
            "published_at": 0.0,
        }

    def learner_get_data_task(self, worker: str, data: dict) -> dict:
        batch = self.learner_batch or self.start_batch
        it = self.iteration
        return {"batch_size": batch, "iteration": it, "policy_version": it, "stop_reason": None}

    def _policy(self, iteration: int) -> dict:
        path = str(self.path_policy / f"policy_v{iteration:08d}.pt")
        return {"policy_path": path, "policy_version": iteration, "published_at": 0.0}

    def learner_learn_task(self, worker: str, data: dict) -> dict:
        if data.get("batch") in self.answers:  # trained on already: the same answer
            return self.answers[data["batch"]]
        self.answers[data["batch"]] = answer = self._learn(data)
        return answer

    def _learn(self, data: dict) -> dict:
        trained = [m["path"] for m in data["files"]]
        for path in trained:
            Path(path).unlink()
        self.pending -= {Path(p).parent.name for p in trained}
        self.iteration += 1
        done = self.iteration >= self.iters
        return {
            "trained": trained,
            "dropped_stale": [],
            "dropped_invalid": [],
            "dropped_rollback": [],
            "dropped": 0,
            "iteration": self.iteration,
            "policy_version": self.iteration,
            "policy_path": str(self.path_policy / f"policy_v{self.iteration:08d}.pt"),
            "published_at": 0.0,
            "done": done,
            "done_reason": self.done_reason if done else None,
            "stop_reason": None,
            "error": "",
            "scalars": {},
            "policy_lag": 0.0,
        }

    def learner_close_task(self, worker: str, data: dict) -> dict:
        paths = [m["path"] for m in data["discard"]]
        for path in paths:
            Path(path).unlink(missing_ok=True)
        return {"iteration": self.iteration, "dropped_run_end": paths, "stop_reason": None}

    # the scripted collectors
    def collector_start_task(self, worker: str, data: dict) -> dict:
        return {"device": "cpu", "num_envs": 1}

    def collector_data_task(self, worker: str, data: dict) -> dict:
        files = []
        if worker not in self.pending and worker not in self.silent:
            self.pending.add(worker)
            self.seq += 1
            path = self.path_data / worker / rollout_name(self.seq, self.iteration, ROLLOUT)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")  # the coordinator never opens it
            if worker in self.unreported:  # its report got lost; written long ago
                os.utime(path, (time.time() - 60, time.time() - 60))
            else:
                files.append({"path": str(path)})
        result = {
            "files": files,
            "episode_returns": [],
            "envstep": self.seq * ROLLOUT,
            "policy_version": self.iteration,
            "sync_latency_s": [],
            "evals": [],
        }
        if not files and worker not in self.unreported:
            result.update(self.extra.pop(worker, {}))
        result["files"] += self.forged.pop(worker, [])
        return result

    def collector_policy_sync_task(self, worker: str, data: dict) -> dict:
        return {"accepted_version": data["version"]}

    def collector_close_task(self, worker: str, data: dict) -> dict:
        return {"files": [], "evals": []}

    # views of the record
    def names(self, worker: str | None = None) -> list[str]:
        """The names of the tasks sent (to ``worker``, or to anyone), in order."""
        return [c.name for c in self.calls if worker in (None, c.worker)]

    def sent(self, name: str) -> list[tuple[str, dict]]:
        """``(worker, data)`` of every task ``name`` sent, in order."""
        return [(c.worker, c.data) for c in self.calls if c.name == name]

    def learn_files(self) -> list[int]:
        """How many files each learn task handed over."""
        return [len(d["files"]) for _, d in self.sent("learner_learn_task")]


class ScriptedSupervisor:
    """Stands in for the launcher: records failures, optionally registers a replacement."""

    def __init__(self, transport: ScriptedTransport, replace: bool = True) -> None:
        self.transport, self.replace = transport, replace
        self.restarts = 0
        self.failed: list[tuple[str, str]] = []
        self.retired: list[str] = []

    def worker_failed(self, worker_id: str, role: str, reason: str) -> bool:
        self.failed.append((worker_id, role))
        if not self.replace:
            return False
        self.restarts += 1
        self.transport.ids[role].append(f"{worker_id.split('.r')[0]}.r{self.restarts}")
        return True

    def retire(self, worker_id: str) -> None:
        self.retired.append(worker_id)

    def pending(self, role: str) -> int:
        return 0

    def poll(self) -> None:
        pass


def run_scripted(
    tmp_path: Path,
    transport: ScriptedTransport,
    collectors: int = 2,
    supervisor: ScriptedSupervisor | None = None,
    **system: Any,
) -> RunStatus:
    """Runs cartpole_ppo_parallel's coordinator on ``transport`` with ``system.<key>``
    overrides; checks the ledger balances and nothing is left in path_data."""
    system.setdefault("stall_timeout", 10)  # a script that stops feeding ends, not hangs
    overrides = [f"system.collectors={collectors}"]
    overrides += [f"system.{key}={value}" for key, value in system.items()]
    cfg = compile_config("cartpole_ppo_parallel", overrides, seed=0, exp_dir=str(tmp_path))
    coordinator = Coordinator(cfg, transport, restarter=supervisor)
    transport.coordinator = coordinator
    status = coordinator.run(wait_workers=1.0)
    ledger = status.ledger
    assert ledger["written"] == sum(ledger[k] for k in OUTCOMES), ledger
    assert ledger["left_in_path_data"] == 0, ledger
    return status
