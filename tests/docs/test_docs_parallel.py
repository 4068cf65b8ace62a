"""Checks statements of docs/parallel.rst against the code, without starting a parallel run."""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import socket
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from docs_helpers import DOCS, TINY

from ding_lite.config import compile_config
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.coordinator import Coordinator, RunStatus
from ding_lite.coordinator.collectors import (
    COLLECTOR_SEED_STRIDE,
    IDLE_POLL_PER_COLLECTOR_S,
    IDLE_POLL_S,
    MAX_DATA_FAILURES,
)
from ding_lite.coordinator.coordinator import ADOPT_AFTER_S, SCAN_INTERVAL_S
from ding_lite.coordinator.learner_side import MAX_LEARNER_FAILURES
from ding_lite.coordinator.ledger import LEDGER_KEYS, OUTCOMES, RolloutLedger
from ding_lite.coordinator.watchdog import STALL_FACTOR, Backoff, QuietLog
from ding_lite.data.files import write_rollout
from ding_lite.entry import cli, coordinating, parallel, roles, run_report
from ding_lite.entry.launch import local as launcher
from ding_lite.entry.run_dir import lock_exp_dir
from ding_lite.interaction import Code, HttpClient, Master, Slave, protocol, server
from ding_lite.interaction.client import DEFAULT_TIMEOUT
from ding_lite.utils import stop
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.paths import rollout_name
from ding_lite.worker.collector.comm import AsyncCollector, FlaskFileSystemCollector
from ding_lite.worker.collector.comm.flask_fs_collector import EVAL_SEED_OFFSET
from ding_lite.worker.learner.comm import FlaskFileSystemLearner
from ding_lite.worker.learner.comm.intake import LEARN_OUTCOMES, Intake

PARALLEL = DOCS / "parallel.rst"
TOKEN = "doc-test-token"


def region(name: str) -> str:
    text = PARALLEL.read_text(encoding="utf-8")
    begin, end = f"\n.. begin {name}\n", f"\n.. end {name}\n"
    assert text.count(begin) == 1 and text.count(end) == 1, f"markers of '{name}' missing"
    return text.split(begin, 1)[1].split(end, 1)[0]


def page_text() -> str:
    """The page with its line breaks folded, so phrases can be searched across lines."""
    return " ".join(PARALLEL.read_text(encoding="utf-8").split())


def folded(text: str) -> str:
    return " ".join(text.split())


def task_entry(name: str) -> str:
    """The definition of task ``name`` in the 'tasks' region, line breaks folded."""
    parts = re.split(r"^``([a-z_]+_task)``$", region("tasks"), flags=re.M)
    entries = dict(zip(parts[1::2], parts[2::2], strict=True))
    return folded(entries[name])


def list_table_rows(name: str) -> list[list[str]]:
    """The cells of each body row of the list-table between the markers ``name``."""
    rows = re.split(r"^   \* - ", region(name), flags=re.M)[2:]  # skip preamble, header
    return [re.split(r"^     - ", row, flags=re.M) for row in rows]


def documented_routes() -> dict[str, dict[str, str]]:
    """``{route: {field: type name}}`` from the list-table between the 'routes' markers."""
    routes = {}
    for cells in list_table_rows("routes"):
        route = re.fullmatch(r"``(/[a-z_/]+)``", cells[0].strip()).group(1)
        routes[route] = dict(re.findall(r"``(\w+)`` \((\w+)\)", cells[2]))
    return routes


def test_route_table_matches_protocol():
    schemas = {
        protocol.MASTER_REGISTER: protocol.REGISTER_SCHEMA,
        protocol.MASTER_HEARTBEAT: protocol.HEARTBEAT_SCHEMA,
        protocol.MASTER_TASK_RESULT: protocol.TASK_RESULT_SCHEMA,
        protocol.MASTER_DEREGISTER: protocol.DEREGISTER_SCHEMA,
        protocol.SLAVE_TASK: protocol.TASK_SCHEMA,
        protocol.SLAVE_PING: protocol.PING_SCHEMA,
    }
    expected = {
        route: {field: t.__name__ for field, t in schema.items()}
        for route, schema in schemas.items()
    }
    assert documented_routes() == expected


def test_code_table_matches_envelope_codes():
    rows = re.findall(r"^``(\d+)``\s+(\d{3}|\(none\))\s", region("codes"), flags=re.M)
    documented = {int(code): status for code, status in rows}
    assert set(documented) == {int(c) for c in Code}
    for code, status in documented.items():
        if code < 5020:
            assert int(status) == Code(code).http_status


def test_documented_tasks_are_the_handlers():
    names = set(re.findall(r"^``([a-z_]+_task)``$", region("tasks"), flags=re.M))
    learner = FlaskFileSystemLearner().handlers
    collector = FlaskFileSystemCollector().handlers
    assert names == set(learner) | set(collector)


def test_data_task_fields_and_file_metadata(tmp_path):
    data_task = task_entry("collector_data_task")
    loop = AsyncCollector(SimpleNamespace(envstep=0), None, name="c0", path_data=tmp_path)
    for key in loop.drain():
        assert f"``{key}``" in data_task, f"collector_data_task result field {key} missing"

    meta = write_rollout(tmp_path, "c0", 7, {"obs": torch.zeros(3, 2)}, policy_version=1)
    assert meta["path"] == str(tmp_path / "c0" / "00000007_v1_n3.pt")
    text = page_text()
    sentence = text.split("The metadata of one rollout file", 1)[1].split("An evaluation", 1)[0]
    assert set(re.findall(r"``(\w+)``", sentence)) == set(meta)
    assert "``<path_data>/<collector id>/<seq>_v<version>_n<samples>.pt``" in text
    for example in ("00000000_v0_n512.pt", "00000001_v0_n512.pt"):
        seq = int(example[:8])
        assert example == rollout_name(seq, 0, 512) and f"{example}``" in text


def test_result_json_table_lists_every_key():
    cfg = compile_config("cartpole_ppo_parallel")
    result = run_report.run_result(cfg, RunStatus(), 1.0)
    documented = re.findall(r"^``([a-z_0-9]+)``\s", region("result-keys"), flags=re.M)
    assert sorted(documented) == sorted(result)


def test_stop_reason_table_matches_exit_codes():
    rows = re.findall(r"^``([a-z_]+)``\s+(\d+(?: / \d+)?)\s", region("stop-reasons"), flags=re.M)
    assert [reason for reason, _ in rows] == list(stop.STOP_REASONS)
    for reason, codes in rows:
        if reason == stop.INTERRUPTED:
            assert (
                codes == f"{stop.exit_code(reason, 'SIGINT')} / {stop.exit_code(reason, 'SIGTERM')}"
            )
        else:
            assert int(codes) == stop.exit_code(reason)
    keys = folded(region("result-keys"))
    for reason in stop.STOP_REASONS:
        assert f'``"{reason}"``' in keys
    text = page_text()
    for gone in ('"learner lost"', '"limit reached"', "learner lost"):
        assert gone not in text  # reasons of the old vocabulary


def test_ledger_keys_and_outcomes_the_page_lists(tmp_path):
    terms = re.findall(r"^``([a-z_]+)``$", region("ledger"), flags=re.M)
    assert terms == list(RolloutLedger(tmp_path).ledger()) == [*LEDGER_KEYS, "left_in_path_data"]
    assert OUTCOMES == (*LEARN_OUTCOMES, "dropped_run_end")
    equation = "``written = " + " + ".join(OUTCOMES) + "``"
    assert equation in page_text()
    learn = task_entry("learner_learn_task")
    for outcome in LEARN_OUTCOMES:
        assert f"``{outcome}``" in learn


def test_fault_table_answers_every_row_of_the_issue():
    rows = list_table_rows("faults")
    assert len(rows) == 15 + 5  # the fault matrices of issues 12 and 25, one row per fault
    for cells in rows:
        assert len(cells) == 2 and cells[1].strip(), cells
    for reason in re.findall(r'``"([a-z_]+)"``', region("faults")):
        assert reason in stop.STOP_REASONS


def test_numbers_the_page_states():
    text = page_text()
    assert COLLECTOR_SEED_STRIDE == 10007 and EVAL_SEED_OFFSET == 1_000_003
    assert "gets ``seed + 10007 * i``" in text
    assert launcher.CHILD_STOP_S == 8.0  # 4 s to exit, 4 s after SIGTERM, then SIGKILL
    assert "gives the worker processes 4 s to exit on their own" in text
    assert inspect.signature(AsyncCollector).parameters["max_pending_files"].default == 16
    retry = HttpClient("127.0.0.1:9", TOKEN)._session.get_adapter("http://x").max_retries
    assert retry.total == 3 and retry.read is False
    assert set(retry.status_forcelist) == {502, 503, 504}
    waits = []
    for _ in range(3):
        retry = retry.increment(method="POST", url="/")
        waits.append(retry.get_backoff_time())
    assert waits == [0, 0.1, 0.2]
    # Restarts, the watchdog and the loop's pacing.
    assert launcher.RESTART_BACKOFF_S == (0.5, 1.0, 2.0, 4.0, 8.0)
    assert "starts after 0.5, 1, 2, 4 and then 8 s" in text
    assert STALL_FACTOR == 20 and "20 x the slowest iteration so far" in text
    assert MAX_DATA_FAILURES == 5 and "after 5 failures in a row" in text
    assert MAX_LEARNER_FAILURES == 3 and "failed 3 tasks in a row" in text
    assert SCAN_INTERVAL_S == 1.0 and ADOPT_AFTER_S == 2.0
    assert "once a second, scan ``path_data``" in text and "at least 2 s old" in text
    assert (IDLE_POLL_S, IDLE_POLL_PER_COLLECTOR_S) == (0.005, 0.002)
    assert "``max(5 ms, 2 ms x collectors)``" in text
    backoff = Backoff()
    delays = [backoff.failed("c0") for _ in range(9)]
    assert delays[0] == 0.05 and delays[1] == 0.1 and max(delays) == delays[-1] == 5.0
    assert "from 0.05 s, doubling up to 5 s" in text
    assert QuietLog(None).interval == 1.0 and "at most once a second" in text
    # The server.
    assert server.CONNECTION_LIMIT == 4096 and "at most 4,096 open connections" in text
    assert server.OPEN_FILES_TARGET == 65536 and "at most 65,536" in text
    params = inspect.signature(server.HttpServer).parameters
    assert params["channel_timeout"].default == 10.0 and params["threads"].default == 8
    assert "idle or half-sent for 10 s" in text and "a fixed pool of 8 threads" in text
    # Periodic checkpoints of the bundled parallel experiments.
    for name in ("cartpole_ppo_parallel", "pendulum_ppo_parallel", "aircombat_ppo_parallel"):
        assert compile_config(name).learner.hook.save_ckpt_after_iter == 5
    assert DEFAULT_CONFIG["learner"]["hook"]["save_ckpt_after_iter"] == 0
    assert "(5 in the bundled ``*_parallel`` experiments, 0, off, in the defaults)" in text


def test_defaults_the_page_states():
    page = page_text()
    system = DEFAULT_CONFIG["system"]
    assert f"``system.max_pending_files`` of its files ({system['max_pending_files']} by" in page
    assert f"``system.max_policy_lag`` ({system['max_policy_lag']} by default, 2 in" in page
    assert f"``system.keep_policies`` versions ({system['keep_policies']} by default)" in page
    assert f"``system.task_timeout`` ({system['task_timeout']:g} s)" in page
    assert f"``system.http_timeout`` ({system['http_timeout']:g} s)" in page
    assert f"({system['heartbeat_tolerance']:g} by default;" in page
    assert system["max_body_bytes"] == 1 << 20 and "(1 MiB by default)" in page
    assert f"``system.stall_timeout`` is {system['stall_timeout']:g} s by default" in page
    assert f"``system.max_restarts`` restarts ({system['max_restarts']} by default)" in page
    assert f"``system.join_timeout`` ({system['join_timeout']:g} s by default" in page
    tolerance = 2 * system["heartbeat_tolerance"]
    assert f"``2 x system.heartbeat_tolerance`` ({tolerance:g} s by default)" in page
    assert DEFAULT_CONFIG["policy"]["learn"]["max_skipped_steps"] == 50
    assert "``policy.learn.max_skipped_steps`` (50)" in page
    for name in ("cartpole_ppo_parallel", "pendulum_ppo_parallel"):
        assert compile_config(name).system.max_policy_lag == 2


@pytest.fixture
def slave_app():
    slave = Slave(
        "collector",
        "c0",
        "127.0.0.1:9",
        handlers={"collector_data_task": lambda data: {}},
        token=TOKEN,
        max_body_bytes=2048,
    )
    try:
        yield slave.app.test_client()
    finally:
        slave.stop(deregister=False)


def post(client, path, body=None, token=TOKEN, **kwargs):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body is not None:
        kwargs.setdefault("json", body)
    response = client.post(path, headers=headers, **kwargs)
    return response.status_code, response.get_json()


def test_check_order_and_status_codes(slave_app):
    task = {"task_id": "t1", "name": "collector_data_task", "data": {}}
    # 401 comes first, even on a route that does not exist.
    assert post(slave_app, "/nope", {}, token=None)[0] == 401
    assert post(slave_app, "/nope", {}, token="wrong")[0] == 401
    # The size check comes before routing; routing before the body.
    assert post(slave_app, "/nope", data="x" * 4096)[0] == 413
    assert post(slave_app, "/nope", {})[0] == 404
    assert (
        slave_app.get("/slave/task", headers={"Authorization": f"Bearer {TOKEN}"}).status_code
        == 405
    )
    assert post(slave_app, "/slave/task", data="{}", content_type="text/plain")[0] == 400
    bad = '{"task_id": "t1", "name": "collector_data_task", "data": {"x": NaN}}'
    assert post(slave_app, "/slave/task", data=bad, content_type="application/json")[0] == 400
    assert post(slave_app, "/slave/task", {**task, "extra": 1})[0] == 400
    assert post(slave_app, "/slave/task", {**task, "name": "unknown_task"})[0] == 400
    status, envelope = post(slave_app, "/slave/task", task)
    assert status == 200 and envelope == {
        "success": True,
        "code": 0,
        "message": "ok",
        "data": {"queued": 1},
    }
    status, envelope = post(slave_app, "/slave/task", task)
    assert status == 409 and envelope["code"] == 4090 and envelope["data"] is None


def test_master_route_errors():
    master = Master(token=TOKEN)
    client = master.app.test_client()
    try:
        register = {"worker_id": "w0", "role": "learner", "address": "127.0.0.1:9"}
        status, envelope = post(client, protocol.MASTER_REGISTER, register)
        assert status == 200 and set(envelope["data"]) == {"worker_id", "heartbeat_tolerance"}
        assert post(client, protocol.MASTER_REGISTER, register)[0] == 200  # a refresh
        assert post(client, protocol.MASTER_REGISTER, {**register, "role": "collector"})[0] == 409
        elsewhere = {**register, "address": "127.0.0.1:10"}
        assert post(client, protocol.MASTER_REGISTER, elsewhere)[0] == 409  # a live holder
        assert post(client, protocol.MASTER_REGISTER, {**register, "address": "x"})[0] == 400
        for bad_id in ("..", ".", "a/b", "w:0", "x" * 65):
            assert post(client, protocol.MASTER_REGISTER, {**register, "worker_id": bad_id})[0] == (
                400
            ), bad_id
        assert post(client, protocol.MASTER_REGISTER, {**register, "worker_id": "x" * 64})[0] == 200
        status, envelope = post(client, protocol.MASTER_HEARTBEAT, {"worker_id": "w0"})
        assert status == 200 and envelope["data"] == {"address": "127.0.0.1:9"}
        assert post(client, protocol.MASTER_HEARTBEAT, {"worker_id": "w9"})[0] == 404
        result = {"task_id": "t", "worker_id": "w0", "success": True, "result": {}, "error": ""}
        assert post(client, protocol.MASTER_TASK_RESULT, result)[0] == 404
        assert post(client, protocol.MASTER_DEREGISTER, {"worker_id": "w0"})[0] == 200
        assert post(client, protocol.MASTER_DEREGISTER, {"worker_id": "w0"})[0] == 404
    finally:
        master.stop()
    register_row = folded(list_table_rows("routes")[0][3])
    assert protocol.WORKER_ID_RULE.startswith("1-64 characters from letters, digits and . _ -")
    assert "not 1-64 of ``A-Z a-z 0-9 . _ -`` or is ``.`` or ``..``" in register_row
    assert "held by a live worker" in register_row and "at another address" in register_row
    assert "``{address}``" in folded(list_table_rows("routes")[1][3])


def test_learner_start_get_data_and_close_results(tmp_path):
    """The learner's task results, field by field, against the page's task entries."""
    cfg = compile_config(
        "cartpole_ppo_parallel", TINY, exp_dir=str(tmp_path), seed=0, max_train_iter=1
    )
    cfg.system.path_policy = str(tmp_path / "policy")
    cfg.system.path_data = str(tmp_path / "data")
    learner = FlaskFileSystemLearner()
    start = learner.start_task({"config": dict(cfg)})
    try:
        assert set(start) == {
            "policy_path",
            "policy_version",
            "resumed_from",
            "checkpoint",
            "envstep",
            "batch_size",
            "ranks",
            "published_at",
        }
        assert start["ranks"] == 1  # not distributed
        assert start["policy_version"] == 0 and start["resumed_from"] is None
        assert start["checkpoint"] is None
        assert "``checkpoint`` (the file name it loaded, or" in page_text()
        assert start["policy_path"] == str(tmp_path / "policy" / "policy_v00000000.pt")
        n_steps, num_envs = cfg.policy.collect.n_steps, cfg.env.num_envs
        assert start["batch_size"] == n_steps * num_envs * cfg.system.collectors
        for key in start:
            assert f"``{key}``" in task_entry("learner_start_task"), key
        demand = learner.get_data_task({})
        assert set(demand) == {"batch_size", "iteration", "policy_version", "stop_reason", "error"}
        assert demand["stop_reason"] is None and demand["error"] == ""
        for key in demand:
            assert f"``{key}``" in task_entry("learner_get_data_task"), key
    finally:
        closed = learner.close_task({"discard": []})
    assert closed == {
        "iteration": 0,
        "dropped_run_end": [],
        "stop_reason": None,
        "error": "",
        "best": None,
    }
    for key in closed:
        assert f"``{key}``" in task_entry("learner_close_task"), key
    assert learner.closed.is_set()


def test_learn_info_fields_and_done_reason():
    learner = FlaskFileSystemLearner()
    learner.cfg = SimpleNamespace(max_env_step=100, max_train_iter=5)
    fake = SimpleNamespace(envstep=0, train_iter=0, learn_info={}, stop_reason=None)
    learner._learner = fake
    intake = Intake()
    intake.lags.append(1)
    info = learner._info(intake)
    assert info["done_reason"] is None and info["stop_reason"] is None
    entry = task_entry("learner_learn_task")
    for key in info:
        assert f"``{key}``" in entry, key
    fake.train_iter = 5
    info = learner._info(Intake())
    assert info["done"] and info["done_reason"] == "max_train_iter"
    fake.envstep = 100  # both reached: the env-step limit is named
    assert learner._info(Intake())["done_reason"] == "max_env_step"
    assert "the env-step limit taking precedence" in entry
    fake.envstep, fake.train_iter, fake.stop_reason = 0, 1, stop.DIVERGED
    info = learner._info(Intake())
    assert info["done"] and info["done_reason"] == info["stop_reason"] == "diverged"
    assert '``"diverged"`` when it stopped for too many skipped steps' in entry


# --- the coordinator's protocol, driven through a scripted transport -----------------------
# No worker runs here: the transport answers every task from a script, writing and deleting
# (empty) rollout files as collectors and a learner would, so these tests check the
# coordinator's side of what the page says (order of tasks, demand, timeouts, stops, ledger).

ROLLOUT = 32  # samples per scripted rollout


def outcome(success=True, result=None, error=""):
    return SimpleNamespace(success=success, result=result or {}, error=error, elapsed_s=0.0)


class ScriptedTransport:
    """A learner and collectors that answer from a script; records every task sent.

    A collector writes one rollout file and reports it, then waits until a learn task has
    taken it, as a collector with ``system.max_pending_files`` 1 does.
    """

    def __init__(self, root, collectors, *, iters=3, learners=("learner0",), **script):
        self.path_data, self.path_policy = Path(root) / "data", Path(root) / "policy"
        self.ids = {"learner": list(learners), "collector": list(collectors)}
        self.iters = iters
        self.learner_batch = script.get("learner_batch")
        self.fail_start = dict(script.get("fail_start", {}))  # worker -> error
        self.silent = set(script.get("silent", ()))  # collectors that never collect
        self.unreported = set(script.get("unreported", ()))  # write files, report none
        self.done_reason = script.get("done_reason", "max_train_iter")
        self.resume_version = script.get("resume_version", 0)
        self.extra: dict[str, dict] = {}  # worker -> fields of its next result with no file
        self.forged: dict[str, list] = {}  # worker -> paths to add to its next data result
        self.calls: list[tuple[str, str, dict, float]] = []
        self.iteration, self.seq = 0, 0
        self.pending: set[str] = set()
        self.after_learn = None  # called with self after each learn task
        self.coordinator = None

    def worker_ids(self, role):
        return list(self.ids[role])

    def workers(self, role=None):
        roles = [role] if role else list(self.ids)
        return [
            SimpleNamespace(worker_id=w, role=r, address=f"scripted:{w}")
            for r in roles
            for w in self.ids[r]
        ]

    def send_task(self, worker, name, data, timeout):
        self.calls.append((worker, name, data, timeout))
        if len(self.calls) > 20_000 and self.coordinator is not None:
            self.coordinator.request_stop(stop.STALLED)  # a script that never ends
        if name.endswith("_start_task") and worker in self.fail_start:
            return outcome(False, error=self.fail_start[worker])
        result = getattr(self, name)(worker, data)
        if name == "learner_learn_task" and self.after_learn is not None:
            self.after_learn(self)
        return outcome(True, result)

    def send_task_async(self, worker, name, data, timeout):
        future = Future()
        future.set_result(self.send_task(worker, name, data, timeout))
        return future

    # learner
    def learner_start_task(self, worker, data):
        resumed = bool(data["config"]["learner"]["hook"].get("load_ckpt_before_run"))
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

    def learner_get_data_task(self, worker, data):
        batch = self.learner_batch or self.start_batch
        it = self.iteration
        return {"batch_size": batch, "iteration": it, "policy_version": it, "stop_reason": None}

    def learner_learn_task(self, worker, data):
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

    def learner_close_task(self, worker, data):
        paths = [m["path"] for m in data["discard"]]
        for path in paths:
            Path(path).unlink(missing_ok=True)
        return {"iteration": self.iteration, "dropped_run_end": paths, "stop_reason": None}

    # collectors
    def collector_start_task(self, worker, data):
        return {"device": "cpu", "num_envs": 1}

    def collector_data_task(self, worker, data):
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

    def collector_policy_sync_task(self, worker, data):
        return {"accepted_version": data["version"]}

    def collector_close_task(self, worker, data):
        return {"files": [], "evals": []}

    # views of the record
    def names(self, worker):
        return [name for w, name, _, _ in self.calls if w == worker]

    def sent(self, name):
        return [(w, d) for w, n, d, _ in self.calls if n == name]

    def learn_files(self):
        return [len(d["files"]) for _, d in self.sent("learner_learn_task")]


class ScriptedSupervisor:
    """Stands in for the launcher: records failures, optionally registers a replacement."""

    def __init__(self, transport, replace=True):
        self.transport, self.replace = transport, replace
        self.restarts = 0
        self.failed: list[tuple[str, str]] = []
        self.retired: list[str] = []

    def worker_failed(self, worker_id, role, reason):
        self.failed.append((worker_id, role))
        if not self.replace:
            return False
        self.restarts += 1
        self.transport.ids[role].append(f"{worker_id.split('.r')[0]}.r{self.restarts}")
        return True

    def retire(self, worker_id):
        self.retired.append(worker_id)

    def pending(self, role):
        return 0

    def poll(self):
        pass


def run_scripted(tmp_path, transport, collectors=2, supervisor=None, **system):
    system.setdefault("stall_timeout", 10)  # a script that stops feeding ends, not hangs
    overrides = [f"system.collectors={collectors}"]
    overrides += [f"system.{key}={value}" for key, value in system.items()]
    cfg = compile_config("cartpole_ppo_parallel", overrides, seed=0, exp_dir=str(tmp_path))
    coordinator = Coordinator(cfg, transport, supervisor=supervisor)
    transport.coordinator = coordinator
    status = coordinator.run(wait_workers=1.0)
    ledger = status.ledger
    assert ledger["written"] == sum(ledger[k] for k in OUTCOMES), ledger
    assert ledger["left_in_path_data"] == 0, ledger
    return status


def test_learner_protocol_is_start_then_get_data_before_every_learn_then_close(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3)
    status = run_scripted(tmp_path, transport)
    short = {
        "learner_start_task": "S",
        "learner_get_data_task": "G",
        "learner_learn_task": "L",
        "learner_close_task": "C",
    }
    sequence = "".join(short[n] for n in transport.names("learner0"))
    assert re.fullmatch(r"S(GL)+C", sequence), sequence
    assert sequence.count("L") == 3 and transport.learn_files() == [2, 2, 2]
    text = page_text()
    assert "sends it before every ``learner_learn_task``" in text
    order = "``learner_get_data_task`` followed by ``learner_learn_task`` for every iteration"
    assert order in text
    assert status.done and status.stop_reason == "max_train_iter"
    assert status.ledger["trained"] == 6


def test_batch_size_comes_from_the_get_data_answer(tmp_path):
    # The start task says 2 rollouts; get_data says 1: each learn task then takes 1 file.
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3, learner_batch=ROLLOUT)
    status = run_scripted(tmp_path, transport)
    assert transport.learn_files() == [1, 1, 1]
    assert status.ledger["dropped_run_end"] >= 1  # the file of the other collector
    assert "uses the ``batch_size`` of its answer" in page_text()


def test_demand_follows_running_collectors_and_config_errors_are_not_restarted(tmp_path):
    """3 configured collectors: c2 cannot start (a config error), c1 is lost after the first
    iteration and not replaced (no restart left).

    Each collector holds at most one unconsumed file, so a demand of more rollouts than
    the running collectors can provide would stall the run.
    """
    error = "ConfigError: device 'cuda' asked for but CUDA is not available"
    transport = ScriptedTransport(tmp_path, ["c0", "c1", "c2"], iters=4, fail_start={"c2": error})
    supervisor = ScriptedSupervisor(transport, replace=False)

    def lose_c1(t):
        if t.iteration == 1 and "c1" in t.ids["collector"]:
            t.ids["collector"].remove("c1")

    transport.after_learn = lose_c1
    status = run_scripted(tmp_path, transport, collectors=3, supervisor=supervisor)
    assert status.stop_reason == "max_train_iter" and status.train_iter == 4
    assert transport.learn_files() == [2, 1, 1, 1]  # c0 + c1, then c0 alone
    # never polled or synced; closed at once, so its process exits
    assert transport.names("c2") == ["collector_start_task", "collector_close_task"]
    assert supervisor.failed == [("c1", "collector")]  # c2 is not handed over: no restart
    assert supervisor.retired == ["c2"]
    assert status.failed_tasks == 1  # the failed start
    text = page_text()
    assert "is dropped for good (``collector <id> dropped, it cannot start``)" in text
    assert "and sent ``collector_close_task``, so its process exits" in text
    assert "The demand is one rollout per running collector" in text
    assert "never ends or stalls the run as long as another one runs" in text


def test_request_stop_reason_becomes_the_stop_reason(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=100)
    transport.after_learn = lambda t: t.coordinator.request_stop("operator stop")
    status = run_scripted(tmp_path, transport)
    assert status.stop_reason == "operator stop" and status.train_iter == 1
    assert stop.exit_code("operator stop") == 1
    assert "called ``request_stop(reason)``: ``stop_reason`` is that reason" in page_text()


def test_task_timeouts_the_page_states(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=2)
    run_scripted(tmp_path, transport, http_timeout=7, task_timeout=33)
    timeouts = {}
    for _, name, _, timeout in transport.calls:
        timeouts.setdefault(name, set()).add(timeout)
    short = {"learner_get_data_task", "collector_data_task", "collector_policy_sync_task"}
    for name, seen in timeouts.items():
        assert seen == ({7.0} if name in short else {33.0}), name
    assert (
        "``system.http_timeout`` (10 s) for ``learner_get_data_task``, data and policy sync"
        in page_text()
    )


def test_a_done_without_a_reason_ends_as_max_train_iter(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0"], iters=2, done_reason=None)
    status = run_scripted(tmp_path, transport, collectors=1)
    assert status.stop_reason == "max_train_iter" and status.train_iter == 2
    assert 'without giving a reason ends the run with ``"max_train_iter"``' in page_text()


def test_files_nobody_reported_are_adopted(tmp_path):
    """c1's data results never name its file (a lost result); the scan adopts the file."""
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3, unreported={"c1"})
    status = run_scripted(tmp_path, transport)
    assert status.train_iter == 3 and status.ledger["trained"] == 6
    assert "c1" in {
        Path(m["path"]).parent.name
        for _, d in transport.sent("learner_learn_task")
        for m in d["files"]
    }
    assert "complete rollout files nobody reported" in page_text()


def test_forged_paths_and_evaluations_change_nothing(tmp_path):
    outside = tmp_path / "config.json"  # a file of the run, outside path_data
    outside.write_text("{}")
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=3)
    evaluation = {"policy_version": 0, "return_mean": 10.0, "return_std": 0.0}
    evaluation.update(n_episodes=20, solved=True, win_rate=None)  # below 475, "solved" anyway
    transport.extra["c0"] = {"evals": [evaluation]}  # c0 evaluates: judged by its mean
    transport.extra["c1"] = {"evals": [{**evaluation, "return_mean": 1e9}]}  # not asked to
    transport.after_learn = lambda t: t.forged.setdefault("c0", [str(outside), "/etc/passwd"])
    status = run_scripted(tmp_path, transport)  # stop_value 475
    assert not status.solved and status.eval_return == 10.0
    assert status.stop_reason == "max_train_iter" and status.ledger["trained"] == 6
    assert status.failed_tasks == 1  # c1's result with an evaluation: refused whole
    assert outside.read_text() == "{}"  # never handed to the learner, never deleted
    for _, data in transport.sent("learner_learn_task") + transport.sent("learner_close_task"):
        assert str(outside) not in [m["path"] for m in data.get("files", data.get("discard"))]
    text = page_text()
    assert "it ignores the report's ``solved``" in text
    assert "is refused whole and counts as a failed task" in text


def test_watchdog_stops_a_stalled_run_naming_what_it_waited_on(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], silent={"c0", "c1"})
    started = time.monotonic()
    status = run_scripted(tmp_path, transport, stall_timeout=0.3)
    assert time.monotonic() - started < 5.0
    assert status.stop_reason == "stalled" and status.train_iter == 0
    assert "waiting on rollouts from c0, c1 (0/64 samples)" in status.stop_detail
    assert "``rollouts from collector0, collector1 (<have>/<need> samples)``" in page_text()


def test_no_collector_left_ends_the_run(tmp_path):
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=100)
    transport.after_learn = lambda t: t.ids["collector"].clear()
    status = run_scripted(tmp_path, transport, heartbeat_tolerance=0.1)
    assert status.stop_reason == "no_collectors" and status.train_iter == 1
    assert "no collector is left" in status.stop_detail
    assert stop.exit_code(status.stop_reason) == 1


def test_a_learner_whose_start_fails_is_dropped_and_the_next_one_started(tmp_path):
    learners = ("learner-forged", "learner0")  # sorted: the forged one is tried first
    fail = {"learner-forged": "could not deliver task: connection refused"}
    transport = ScriptedTransport(tmp_path / "a", ["c0"], learners=learners, fail_start=fail)
    status = run_scripted(tmp_path / "a", transport, collectors=1)
    assert status.stop_reason == "max_train_iter" and transport.names("learner-forged") == [
        "learner_start_task"
    ]
    assert "learner_learn_task" in transport.names("learner0")
    # A config error ends the run at once: every other try would fail the same way.
    fail = {"learner0": "ConfigError: device 'cuda' asked for but CUDA is not available"}
    transport = ScriptedTransport(tmp_path / "b", ["c0"], fail_start=fail)
    started = time.monotonic()
    status = run_scripted(tmp_path / "b", transport, collectors=1)
    assert status.stop_reason == "learner_failed" and time.monotonic() - started < 0.9
    assert "the next one is tried, so a learner registered by someone else" in page_text()


def test_a_lost_learner_is_restarted_from_the_checkpoint(tmp_path):
    """learner0 is lost after iteration 3; its replacement resumes at the checkpoint of
    iteration 2, and every collector is synced back to that version."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "ckpt_iter00000002.pt").write_bytes(b"")
    transport = ScriptedTransport(tmp_path, ["c0", "c1"], iters=5, resume_version=2)
    supervisor = ScriptedSupervisor(transport)

    def lose_learner(t):
        if t.iteration == 3 and "learner0" in t.ids["learner"]:
            t.ids["learner"].remove("learner0")

    transport.after_learn = lose_learner
    status = run_scripted(tmp_path, transport, supervisor=supervisor)
    assert supervisor.failed == [("learner0", "learner")] and status.restarts == 1
    assert status.stop_reason == "max_train_iter" and status.train_iter == 5
    (_, start), *_ = transport.sent("learner_start_task")[1:]
    assert start["config"]["learner"]["hook"]["load_ckpt_before_run"] == str(tmp_path / "ckpt")
    rollbacks = [w for w, d in transport.sent("collector_policy_sync_task") if d.get("rollback")]
    assert sorted(rollbacks) == ["c0", "c1"]
    assert transport.names("learner0.r1").count("learner_learn_task") == 3  # iterations 3-5
    text = page_text()
    assert "starts a replacement under a fresh id, ``<id>.r<n>``" in text
    assert "gets a policy sync with ``rollback: true``" in text


# --- launcher, worker commands and entry points ---------------------------------------------


class FakeProc:
    """What the launcher needs of a ``subprocess.Popen``."""

    def __init__(self):
        self.returncode = None
        self.killed = False

    def poll(self):
        return self.returncode

    def kill(self):
        self.killed, self.returncode = True, -9

    def wait(self, timeout=None):
        return self.returncode


def test_launcher_drops_a_worker_whose_process_exited(tmp_path):
    cfg = compile_config("cartpole_ppo_parallel", ["system.max_restarts=0"])
    supervisor = launcher.Launcher(cfg, "127.0.0.1:1", TOKEN, tmp_path)
    supervisor.procs["learner0"] = FakeProc()
    supervisor.roles["learner0"] = "learner"
    master = SimpleNamespace(worker_ids=lambda role: ["learner0", "remote"])
    transport = launcher.LauncherTransport(master, supervisor)
    assert transport.worker_ids("learner") == ["learner0", "remote"]
    supervisor.procs["learner0"].returncode = 1  # the child exited
    assert transport.worker_ids("learner") == ["remote"]  # at once, heartbeats or not
    assert "a worker whose process has exited counts as gone for the coordinator at once" in (
        page_text()
    )


def test_launcher_replaces_a_failed_worker_under_a_fresh_id(tmp_path, monkeypatch):
    spawned = []

    def spawn(role, worker_id, address, token, cfg, log_dir, register=None, rank_env=None):
        spawned.append(worker_id)
        return FakeProc()

    monkeypatch.setattr(launcher, "spawn_worker", spawn)
    cfg = compile_config("cartpole_ppo_parallel", ["system.max_restarts=2"])
    supervisor = launcher.Launcher(cfg, "127.0.0.1:1", TOKEN, tmp_path)
    supervisor.start_all()
    assert spawned == ["learner0", "collector0", "collector1"]
    supervisor.mark_registered(spawned)
    old = supervisor.procs["collector1"]
    assert supervisor.worker_failed("collector1", "collector", "lost") is True
    assert old.killed and supervisor.restarts == 1 and not supervisor.alive("collector1")
    assert supervisor.pending("collector") == 1  # due after its backoff
    supervisor.poll()
    assert "collector1.r1" not in spawned  # 0.5 s have not passed yet
    time.sleep(launcher.RESTART_BACKOFF_S[0] + 0.05)
    supervisor.poll()
    assert spawned[-1] == "collector1.r1"
    assert supervisor.worker_failed("collector1.r1", "collector", "lost") is True
    (when, _, new_id), *_ = supervisor._due
    assert new_id == "collector1.r2" and when - time.monotonic() > 0.5  # the second backoff
    # The budget is per run: no restart left for the learner, which is killed all the same.
    learner = supervisor.procs["learner0"]
    assert supervisor.worker_failed("learner0", "learner", "lost") is False
    assert learner.killed and supervisor.restarts == 2
    assert supervisor.worker_failed("learner0", "learner", "lost") is False  # same answer
    assert supervisor.alive("remote")  # not a child of this launcher


def test_worker_options_and_defaults():
    parser = cli.build_parser()
    for role in ("learner", "collector"):
        args = parser.parse_args([role, "--coordinator", "127.0.0.1:1"])
        assert args.worker_id == f"{role}-{socket.gethostname()}-{os.getpid()}"
        assert args.port == 0 and args.master_timeout == 60.0 and args.heartbeat_period == 1.0
        assert args.host == "127.0.0.1"
    text = page_text()
    assert "The default, ``<role>-<hostname>-<pid>``" in text
    assert "``<role>-<pid>``" not in text
    assert "``--master-timeout`` seconds (60 by default)" in text
    assert "``--master-timeout`` (seconds, 60 by default" in text
    assert "``--heartbeat-period`` (seconds, 1 by default)" in text
    assert "does not exit on its own" not in text


def test_worker_ids_outside_the_rule_are_refused_before_registering():
    for bad_id in ("..", "a/b"):
        with pytest.raises(ConfigError, match="worker id must be"):
            Slave("collector", bad_id, "127.0.0.1:9", handlers={"x": dict}, token=TOKEN)
    assert "a worker refuses to start with another one (exit code 2)" in page_text()


def test_coordinator_needs_a_config_or_resume(capsys):
    code = cli.main(["coordinator"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert f"``{err}``" in page_text()


def test_a_second_run_on_a_dir_is_refused_naming_the_holder(tmp_path):
    with lock_exp_dir(tmp_path / "run"):
        with pytest.raises(ConfigError) as refused:
            lock_exp_dir(tmp_path / "run")
    message = str(refused.value).replace(str(tmp_path / "run"), "<exp_dir>")
    message = message.replace(f"pid {os.getpid()}", "pid <pid>")
    assert f"``ding-lite: error: {message}``" in page_text()


class FakeWorker:
    def __init__(self, *, worker_id, device, slave_factory):
        self.slave = slave_factory({})
        self.closed = threading.Event()

    def start(self):
        pass

    def close(self):
        pass


def test_run_worker_options_reach_the_slave_and_master_timeout_stops(monkeypatch):
    """``--port`` goes to the Slave, the client timeout stays the default, INFO logging, and
    a worker whose coordinator stays silent past ``master_timeout`` exits 1."""
    built, levels = {}, []

    class FakeSlave:
        evicted = None

        def __init__(self, *args, **kwargs):
            built.update(kwargs)
            self.last_contact = time.monotonic() - 1_000.0  # no answer for a long time

    monkeypatch.setattr(roles, "Slave", FakeSlave)
    monkeypatch.setattr(roles, "FlaskFileSystemCollector", FakeWorker)
    monkeypatch.setattr(roles, "setup_console_logging", levels.append)
    code = roles.run_worker(
        "collector",
        coordinator="127.0.0.1:1",
        worker_id="c0",
        token=TOKEN,
        port=4321,
        master_timeout=0.1,
    )
    assert code == 1
    assert built["port"] == 4321 and "client_timeout" not in built
    assert levels == [logging.INFO]
    slave = Slave("learner", "w", "127.0.0.1:9", handlers={"x": dict}, token=TOKEN)
    try:
        assert isinstance(slave.last_contact, float) and slave.evicted is None  # watched
    finally:
        slave.stop(deregister=False)
    assert DEFAULT_TIMEOUT == (3.05, 10.0)
    text = page_text()
    assert "keep the client's default of 10 s, whatever the config says" in text
    assert "and 1 when the coordinator has not answered its heartbeats" in text
    assert "Workers log their records of level INFO and above to stderr" in text


def test_a_worker_whose_id_was_taken_over_stops(monkeypatch, caplog):
    reason = "worker id 'c0' is in use by a live collector at 127.0.0.1:5; pick another --worker-id"

    class EvictedSlave:
        evicted = reason

        def __init__(self, *args, **kwargs):
            self.last_contact = time.monotonic()  # the master answered just now

    monkeypatch.setattr(roles, "Slave", EvictedSlave)
    monkeypatch.setattr(roles, "FlaskFileSystemCollector", FakeWorker)
    monkeypatch.setattr(roles, "setup_console_logging", lambda level: None)
    with caplog.at_level(logging.ERROR, logger="ding_lite"):
        code = roles.run_worker("collector", coordinator="127.0.0.1:1", worker_id="c0", token=TOKEN)
    assert code == 1 and f"stopping: {reason}" in caplog.text
    assert "``stopping: worker id '<id>' is in use by a live ...``" in page_text()


def test_master_reads_worker_answers_for_http_timeout(monkeypatch):
    seen = {}

    class FakeMaster:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def start(self):
            return self

    monkeypatch.setattr(coordinating, "Master", FakeMaster)
    cfg = compile_config("cartpole_ppo_parallel", ["system.http_timeout=7"])
    coordinating.start_master(cfg, TOKEN)
    assert seen["client_timeout"] == (3.05, 7.0)
    assert "read for at most ``system.http_timeout`` seconds" in page_text()


@pytest.mark.parametrize("interrupted", [False, True])
def test_run_coordinator_tidies_path_data_and_writes_result(tmp_path, monkeypatch, interrupted):
    cfg = parallel.compile_parallel_config(
        "cartpole_ppo_parallel", exp_dir=str(tmp_path / "run"), overrides=[]
    )
    cfg.system.token = TOKEN
    data = Path(cfg.system.path_data)
    temp = data / "c9" / ".00000000_v0_n4.pt.tmp"  # a collector killed mid-write
    temp.parent.mkdir(parents=True)
    temp.write_bytes(b"x")
    (data / "c8").mkdir()
    waits = []

    class FakeCoordinator:
        def __init__(self, *args, **kwargs):
            self.status = RunStatus(stop_reason="max_train_iter")
            self.started_at, self.cpu_before = time.time(), 0.0

        def save(self, kind):
            pass

        def run(self, wait_workers):
            waits.append(wait_workers)
            if interrupted:
                self.status.stop_reason = "interrupted"
                raise KeyboardInterrupt
            return self.status

    monkeypatch.setattr(coordinating, "Coordinator", FakeCoordinator)
    if interrupted:
        with pytest.raises(stop.RunInterrupted):
            coordinating.run_coordinator(cfg, progress=False)
    else:
        assert coordinating.run_coordinator(cfg, progress=False)["stop_reason"] == "max_train_iter"
    if interrupted:  # before its first checkpoint: what the run wrote is removed
        assert not (tmp_path / "run" / "result.json").exists()
        assert not (tmp_path / "run" / "config.json").exists()
    else:
        saved = json.loads((tmp_path / "run" / "result.json").read_text())
        assert saved["stop_reason"] == "max_train_iter"
    assert waits == [cfg.system.join_timeout] == [120.0]
    assert not any(data.iterdir())  # temp files and empty collector folders removed
    lock_exp_dir(tmp_path / "run").release()  # the run let go of its dir
    text = page_text()
    assert "``ding-lite parallel`` or ``ding-lite coordinator`` ends" in text
    assert "and writes ``result.json`` too" in text


def test_summary_prints_the_ledger_as_the_page_shows():
    status = RunStatus(stop_reason="stalled", stop_detail="no iteration for 300 s", restarts=2)
    status.ledger = {**dict.fromkeys(LEDGER_KEYS, 0), "left_in_path_data": 0}
    cfg = compile_config("cartpole_ppo_parallel")
    lines = run_report.summary(run_report.run_result(cfg, status, 1.0)).splitlines()
    assert lines[0].startswith("not solved (stalled): ") and lines[0].endswith(", 2 restart(s)")
    assert lines[1] == "stopped: no iteration for 300 s"
    shown = re.sub(r"\b0\b", "<N>", lines[2])
    assert f"    {shown}\n" in PARALLEL.read_text(encoding="utf-8")


def test_parallel_pipeline_is_exported():
    import ding_lite

    assert ding_lite.parallel_pipeline is parallel.parallel_pipeline
    assert "parallel_pipeline" in ding_lite.__all__
    text = PARALLEL.read_text(encoding="utf-8")
    assert "    from ding_lite import parallel_pipeline\n" in text
    assert "It is not exported" not in text
