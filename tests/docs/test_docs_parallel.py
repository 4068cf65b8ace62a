"""Checks statements of docs/parallel.rst against the code, without starting a parallel run."""

from __future__ import annotations

import inspect
import re
from types import SimpleNamespace

import pytest
import torch
from docs_helpers import DOCS, TINY

from ding_lite.config import compile_config
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.coordinator import RunStatus
from ding_lite.coordinator.coordinator import COLLECTOR_SEED_STRIDE
from ding_lite.data.files import write_rollout
from ding_lite.entry import parallel
from ding_lite.interaction import Code, HttpClient, Master, Slave, protocol
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
        assert set(start) == {"policy_path", "policy_version", "batch_size", "published_at"}
        assert start["policy_version"] == 0
        assert start["policy_path"] == str(tmp_path / "policy" / "policy_v00000000.pt")
        n_steps, num_envs = cfg.policy.collect.n_steps, cfg.env.num_envs
        assert start["batch_size"] == n_steps * num_envs * cfg.system.collectors
        assert set(learner.get_data_task({})) == {"batch_size", "iteration", "policy_version"}
    finally:
        assert learner.close_task({"discard": []}) == {"iteration": 0}
    assert learner.closed.is_set()
