"""Checks statements of docs/parallel.rst against the code, without starting a parallel run."""

from __future__ import annotations

import inspect
import logging
import os
import re
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from docs_helpers import DOCS, TINY

from ding_lite.config import compile_config
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.coordinator import Coordinator, RunStatus
from ding_lite.coordinator.coordinator import COLLECTOR_SEED_STRIDE
from ding_lite.data.files import write_rollout
from ding_lite.entry import cli, parallel
from ding_lite.interaction import Code, HttpClient, Master, Slave, protocol
from ding_lite.interaction.client import DEFAULT_TIMEOUT
from ding_lite.worker.collector.comm import AsyncCollector, FlaskFileSystemCollector
from ding_lite.worker.collector.comm.flask_fs_collector import EVAL_SEED_OFFSET
from ding_lite.worker.learner.comm import FlaskFileSystemLearner

PARALLEL = DOCS / "parallel.rst"
TOKEN = "doc-test-token"


def region(name: str) -> str:
    text = PARALLEL.read_text(encoding="utf-8")
    begin, end = f"\n.. begin {name}\n", f"\n.. end {name}\n"
    assert text.count(begin) == 1 and text.count(end) == 1, f"markers of '{name}' missing"
    return text.split(begin, 1)[1].split(end, 1)[0]


def documented_routes() -> dict[str, dict[str, str]]:
    """``{route: {field: type name}}`` from the list-table between the 'routes' markers."""
    rows = re.split(r"^   \* - ", region("routes"), flags=re.M)[2:]  # skip preamble, header
    routes = {}
    for row in rows:
        cells = re.split(r"^     - ", row, flags=re.M)
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
    text = region("tasks")
    data_task = text.split("``collector_data_task``", 1)[1].split("``collector_policy", 1)[0]
    loop = AsyncCollector(SimpleNamespace(envstep=0), None, name="c0", path_data=tmp_path)
    for key in loop.drain():
        assert f"``{key}``" in data_task, f"collector_data_task result field {key} missing"

    meta = write_rollout(tmp_path, "c0", 7, {"obs": torch.zeros(3, 2)}, policy_version=1)
    assert meta["path"] == str(tmp_path / "c0" / "00000007.pt")
    page = PARALLEL.read_text(encoding="utf-8")
    sentence = page.split("The metadata of one rollout file", 1)[1].split("An evaluation", 1)[0]
    assert set(re.findall(r"``(\w+)``", sentence)) == set(meta)


def test_result_json_table_lists_every_key():
    cfg = compile_config("cartpole_ppo_parallel")
    result = parallel._result(cfg, RunStatus(), 1.0)
    documented = re.findall(r"^``([a-z_0-9]+)``\s", region("result-keys"), flags=re.M)
    assert sorted(documented) == sorted(result)


def test_numbers_the_page_states():
    assert COLLECTOR_SEED_STRIDE == 10007 and EVAL_SEED_OFFSET == 1_000_003
    assert parallel.CHILD_STOP_S == 8.0  # 4 s to exit, 4 s after SIGTERM, then SIGKILL
    assert inspect.signature(AsyncCollector).parameters["max_pending_files"].default == 16
    retry = HttpClient("127.0.0.1:9", TOKEN)._session.get_adapter("http://x").max_retries
    assert retry.total == 3 and retry.read is False
    assert set(retry.status_forcelist) == {502, 503, 504}
    waits = []
    for _ in range(3):
        retry = retry.increment(method="POST", url="/")
        waits.append(retry.get_backoff_time())
    assert waits == [0, 0.1, 0.2]


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
        assert post(client, protocol.MASTER_REGISTER, {**register, "role": "collector"})[0] == 409
        assert post(client, protocol.MASTER_REGISTER, {**register, "address": "x"})[0] == 400
        assert post(client, protocol.MASTER_HEARTBEAT, {"worker_id": "w9"})[0] == 404
        result = {"task_id": "t", "worker_id": "w0", "success": True, "result": {}, "error": ""}
        assert post(client, protocol.MASTER_TASK_RESULT, result)[0] == 404
        assert post(client, protocol.MASTER_DEREGISTER, {"worker_id": "w0"})[0] == 200
        assert post(client, protocol.MASTER_DEREGISTER, {"worker_id": "w0"})[0] == 404
    finally:
        master.stop()


def test_defaults_the_page_states():
    page = " ".join(PARALLEL.read_text(encoding="utf-8").split())
    system = DEFAULT_CONFIG["system"]
    assert f"``system.max_pending_files`` of its files ({system['max_pending_files']} by" in page
    assert f"``system.max_policy_lag`` ({system['max_policy_lag']} by default, 2 in" in page
    assert f"``system.keep_policies`` versions ({system['keep_policies']} by default)" in page
    assert f"``system.task_timeout`` ({system['task_timeout']:g} s)" in page
    assert f"``system.http_timeout`` ({system['http_timeout']:g} s)" in page
    assert f"({system['heartbeat_tolerance']:g} by default;" in page
    assert system["max_body_bytes"] == 1 << 20 and "(1 MiB by default)" in page
    for name in ("cartpole_ppo_parallel", "pendulum_ppo_parallel"):
        assert compile_config(name).system.max_policy_lag == 2


def test_learner_start_and_close_tasks(tmp_path):
    """The start task's result fields and batch size, the first policy file, the close."""
    cfg = compile_config(
        "cartpole_ppo_parallel", TINY, exp_dir=str(tmp_path), seed=0, max_train_iter=1
    )
    cfg.system.path_policy = str(tmp_path / "policy")
    learner = FlaskFileSystemLearner()
    start = learner.start_task({"config": dict(cfg)})
    try:
        assert set(start) == {
            "policy_path",
            "policy_version",
            "envstep",
            "batch_size",
            "published_at",
        }
        assert start["policy_version"] == 0
        assert start["policy_path"] == str(tmp_path / "policy" / "policy_v00000000.pt")
        n_steps, num_envs = cfg.policy.collect.n_steps, cfg.env.num_envs
        assert start["batch_size"] == n_steps * num_envs * cfg.system.collectors
        assert set(learner.get_data_task({})) == {"batch_size", "iteration", "policy_version"}
    finally:
        assert learner.close_task({"discard": []}) == {"iteration": 0}
    assert learner.closed.is_set()


# --- the coordinator's protocol, driven through a scripted transport -----------------------
# No worker runs here: the transport answers every task from a script, so these tests check
# the coordinator's side of what the page says (order of tasks, demand, timeouts, stops).

ROLLOUT = 32  # samples per scripted rollout


def page_text() -> str:
    """The page with its line breaks folded, so phrases can be searched across lines."""
    return " ".join(PARALLEL.read_text(encoding="utf-8").split())


class ScriptedTransport:
    """A learner and collectors that answer from a script; records every task sent.

    A collector hands over one rollout file and then waits until a learn task has taken it,
    as a collector with ``system.max_pending_files`` 1 does.
    """

    def __init__(self, collectors, *, iters=3, learner_batch=None, fail_start=()):
        self.ids = {"learner": ["learner0"], "collector": list(collectors)}
        self.iters, self.learner_batch, self.fail_start = iters, learner_batch, set(fail_start)
        self.calls: list[tuple[str, str, dict, float]] = []
        self.iteration, self.seq = 0, 0
        self.pending: set[str] = set()
        self.after_learn = None  # called with self after each learn task
        self.coordinator = None

    def worker_ids(self, role):
        return list(self.ids[role])

    def send_task(self, worker, name, data, timeout):
        self.calls.append((worker, name, data, timeout))
        if len(self.calls) > 20_000 and self.coordinator is not None:
            self.coordinator.request_stop("stalled")  # the run waits for data that never comes
        if name == "collector_start_task" and worker in self.fail_start:
            return SimpleNamespace(success=False, result=None, error="RuntimeError: no env")
        result = getattr(self, name)(worker, data)
        if name == "learner_learn_task" and self.after_learn is not None:
            self.after_learn(self)
        return SimpleNamespace(success=True, result=result, error=None)

    # learner
    def learner_start_task(self, worker, data):
        batch = ROLLOUT * data["config"]["system"]["collectors"]
        self.start_batch = batch
        return {"policy_path": "v0", "policy_version": 0, "batch_size": batch, "published_at": 0}

    def learner_get_data_task(self, worker, data):
        batch = self.learner_batch or self.start_batch
        return {"batch_size": batch, "iteration": self.iteration, "policy_version": self.iteration}

    def learner_learn_task(self, worker, data):
        self.pending -= {m["collector"] for m in data["files"]}
        self.iteration += 1
        done = self.iteration >= self.iters
        return {
            "trained": True,
            "iteration": self.iteration,
            "policy_version": self.iteration,
            "policy_path": f"v{self.iteration}",
            "published_at": 0,
            "done": done,
            "done_reason": "max_train_iter" if done else None,
            "dropped": 0,
            "scalars": {},
            "policy_lag": 0.0,
        }

    def learner_close_task(self, worker, data):
        return {"iteration": self.iteration}

    # collectors
    def collector_start_task(self, worker, data):
        return {"device": "cpu", "num_envs": 1}

    def collector_data_task(self, worker, data):
        files = []
        if worker not in self.pending:
            self.pending.add(worker)
            self.seq += 1
            files.append(
                {
                    "path": f"/data/{worker}/{self.seq:08d}.pt",
                    "collector": worker,
                    "seq": self.seq,
                    "policy_version": self.iteration,
                    "size": ROLLOUT,
                    "created": 0.0,
                }
            )
        return {
            "files": files,
            "episode_returns": [],
            "envstep": self.seq * ROLLOUT,
            "policy_version": self.iteration,
            "sync_latency_s": [],
            "evals": [],
        }

    def collector_policy_sync_task(self, worker, data):
        return {"accepted_version": data["version"]}

    def collector_close_task(self, worker, data):
        return {"files": [], "evals": []}

    # views of the record
    def names(self, worker):
        return [name for w, name, _, _ in self.calls if w == worker]

    def learn_files(self):
        return [len(d["files"]) for _, name, d, _ in self.calls if name == "learner_learn_task"]


def run_scripted(transport, collectors=2, **system):
    overrides = [f"system.collectors={collectors}"]
    overrides += [f"system.{key}={value}" for key, value in system.items()]
    cfg = compile_config("cartpole_ppo_parallel", overrides, seed=0)
    coordinator = Coordinator(cfg, transport)
    transport.coordinator = coordinator
    return coordinator.run(wait_workers=1.0)


def test_learner_protocol_is_start_then_get_data_before_every_learn_then_close():
    transport = ScriptedTransport(["c0", "c1"], iters=3)
    status = run_scripted(transport)
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
    assert "The current coordinator never sends it" not in text
    order = "``learner_get_data_task`` followed by ``learner_learn_task`` for every iteration"
    assert order in text
    # the stop reason is the learner's done_reason, not "limit reached"
    assert status.done and status.stop_reason == "max_train_iter"


def test_batch_size_comes_from_the_get_data_answer():
    # The start task says 2 rollouts; get_data says 1: each learn task then takes 1 file.
    transport = ScriptedTransport(["c0", "c1"], iters=3, learner_batch=ROLLOUT)
    run_scripted(transport)
    assert transport.learn_files() == [1, 1, 1]
    assert "uses the ``batch_size`` of its answer" in page_text()


def test_demand_follows_live_collectors_and_failed_starts_are_left_alone():
    """3 configured collectors: c2 fails to start, c1 is lost after the first iteration.

    Each collector holds at most one unconsumed file, so a demand of more rollouts than
    the live collectors can provide would stall the run (the transport then asks to stop).
    """
    transport = ScriptedTransport(["c0", "c1", "c2"], iters=4, fail_start=["c2"])

    def lose_c1(t):
        if t.iteration == 1 and "c1" in t.ids["collector"]:
            t.ids["collector"].remove("c1")

    transport.after_learn = lose_c1
    status = run_scripted(transport, collectors=3)
    assert status.stop_reason == "max_train_iter" and status.train_iter == 4
    assert transport.learn_files() == [2, 1, 1, 1]  # c0 + c1, then c0 alone
    assert transport.names("c2") == ["collector_start_task", "collector_close_task"]
    assert status.failed_tasks == 1  # the failed start
    text = page_text()
    assert "a collector whose start task failed is left alone from then on" in text
    assert "The demand is one rollout per live collector" in text
    assert "never ends or stalls the run" in text


def test_request_stop_reason_becomes_the_stop_reason():
    transport = ScriptedTransport(["c0", "c1"], iters=100)
    transport.after_learn = lambda t: t.coordinator.request_stop("operator stop")
    status = run_scripted(transport)
    assert status.stop_reason == "operator stop" and status.train_iter == 1
    assert "called ``request_stop(reason)``: ``stop_reason`` is that reason" in page_text()


def test_task_timeouts_the_page_states():
    transport = ScriptedTransport(["c0", "c1"], iters=2)
    run_scripted(transport, http_timeout=7, task_timeout=33)
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


def test_stop_reasons_listed_in_the_result_table():
    keys = " ".join(region("result-keys").split())
    for reason in ("solved", "max_env_step", "max_train_iter", "learner lost", "interrupted"):
        assert f'``"{reason}"``' in keys
    assert '"limit reached"' not in keys and "Coordinator.request_stop" in keys
    # "limit reached" survives only as the fallback for a learner that gives no reason
    text = page_text()
    assert text.count('"limit reached"') == 1
    assert 'without giving a reason ends the run with ``"limit reached"``' in text


def test_learn_info_done_reason(tmp_path):
    learner = FlaskFileSystemLearner()
    learner.cfg = SimpleNamespace(max_env_step=100, max_train_iter=5)
    fake = SimpleNamespace(envstep=0, last_iter=0, learn_info={})
    learner._learner = fake
    assert learner._info(trained=False, dropped=0)["done_reason"] is None
    fake.last_iter = 5
    info = learner._info(trained=False, dropped=0)
    assert info["done"] and info["done_reason"] == "max_train_iter"
    fake.envstep = 100  # both reached: the env-step limit is named
    assert learner._info(trained=False, dropped=0)["done_reason"] == "max_env_step"
    entry = region("tasks").split("\n``learner_learn_task``\n", 1)[1]
    learn_task = " ".join(entry.split("\n``learner_close_task``\n", 1)[0].split())
    assert "``done_reason``" in learn_task and "the env-step limit taking precedence" in learn_task


# --- launcher, worker commands and entry points ---------------------------------------------


def test_launcher_drops_a_worker_whose_process_exited():
    master = SimpleNamespace(worker_ids=lambda role: ["learner0", "remote"])
    children = {"learner0": SimpleNamespace(poll=lambda: None)}
    transport = parallel._Transport(master, children)
    assert transport.worker_ids("learner") == ["learner0", "remote"]
    children["learner0"] = SimpleNamespace(poll=lambda: 1)  # the child exited
    assert transport.worker_ids("learner") == ["remote"]  # at once, heartbeats or not
    assert "a worker whose process has exited counts as gone for the coordinator at once" in (
        page_text()
    )


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


def test_coordinator_refuses_a_config_and_resume_together(capsys):
    code = cli.main(["coordinator", "-c", "cartpole_ppo_parallel", "--resume", "somewhere"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert f"``{err}``" in page_text()


def test_run_worker_options_reach_the_slave_and_master_timeout_stops(monkeypatch):
    """``--port`` goes to the Slave, the client timeout stays the default, INFO logging, and
    a worker whose coordinator stays silent past ``master_timeout`` exits 1."""
    built, levels = {}, []

    class FakeSlave:
        def __init__(self, *args, **kwargs):
            built.update(kwargs)
            self.last_contact = time.monotonic() - 1_000.0  # no answer for a long time

    class FakeWorker:
        def __init__(self, *, worker_id, device, slave_factory):
            self.slave = slave_factory({})
            self.closed = threading.Event()

        def start(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(parallel, "Slave", FakeSlave)
    monkeypatch.setattr(parallel, "FlaskFileSystemCollector", FakeWorker)
    monkeypatch.setattr(parallel, "setup_console_logging", levels.append)
    code = parallel.run_worker(
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
        assert isinstance(slave.last_contact, float)  # what run_worker watches
    finally:
        slave.stop(deregister=False)
    assert DEFAULT_TIMEOUT == (3.05, 10.0)
    text = page_text()
    assert "keep the client's default of 10 s, whatever the config says" in text
    assert "and 1 when the coordinator has not answered its heartbeats" in text
    assert "Workers log their records of level INFO and above to stderr" in text
    assert "only their warnings and errors" not in text


def test_master_reads_worker_answers_for_http_timeout(monkeypatch):
    seen = {}

    class FakeMaster:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def start(self):
            return self

    monkeypatch.setattr(parallel, "Master", FakeMaster)
    cfg = compile_config("cartpole_ppo_parallel", ["system.http_timeout=7"])
    parallel._start_master(cfg, TOKEN)
    assert seen["client_timeout"] == (3.05, 7.0)
    assert "read for at most ``system.http_timeout`` seconds" in page_text()


def test_run_coordinator_clears_path_data(tmp_path, monkeypatch):
    cfg = parallel.compile_parallel_config(
        "cartpole_ppo_parallel", exp_dir=str(tmp_path / "run"), overrides=[]
    )
    cfg.system.token = TOKEN
    leftover = Path(cfg.system.path_data) / "c9" / "00000000.pt"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"x")

    class FakeCoordinator:
        def __init__(self, *args, **kwargs):
            pass

        def run(self, wait_workers):
            return RunStatus(stop_reason="max_train_iter")

    monkeypatch.setattr(parallel, "Coordinator", FakeCoordinator)
    result = parallel.run_coordinator(cfg, progress=False)
    assert result["stop_reason"] == "max_train_iter"
    assert not any(Path(cfg.system.path_data).iterdir())
    assert "``ding-lite parallel`` or ``ding-lite coordinator`` ends" in page_text()
    assert "does not clear ``path_data``" not in page_text()


def test_parallel_pipeline_is_exported():
    import ding_lite

    assert ding_lite.parallel_pipeline is parallel.parallel_pipeline
    assert "parallel_pipeline" in ding_lite.__all__
    text = PARALLEL.read_text(encoding="utf-8")
    assert "    from ding_lite import parallel_pipeline\n" in text
    assert "It is not exported" not in text
