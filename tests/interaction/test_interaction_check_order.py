"""The order of a request's checks and the answers of the master's routes, as
docs/parallel.rst's tables give them; worker ids outside the rule; the client's retries."""

from __future__ import annotations

import pytest
from helpers import TOKEN
from interaction_helpers import call

from ding_lite.interaction import HttpClient, Master, Slave, protocol
from ding_lite.utils.errors import ConfigError


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
        yield slave.app
    finally:
        slave.stop(deregister=False)


def test_check_order_and_status_codes(slave_app):
    task = {"task_id": "t1", "name": "collector_data_task", "data": {}}
    # 401 comes first, even on a route that does not exist.
    assert call(slave_app, "/nope", {}, token=None)[0] == 401
    assert call(slave_app, "/nope", {}, token="wrong")[0] == 401
    # The size check comes before routing; routing before the body.
    assert call(slave_app, "/nope", raw=b"x" * 4096)[0] == 413
    assert call(slave_app, "/nope", {})[0] == 404
    assert call(slave_app, "/slave/task", task, method="GET")[0] == 405
    assert call(slave_app, "/slave/task", raw=b"{}", content_type="text/plain")[0] == 400
    bad = b'{"task_id": "t1", "name": "collector_data_task", "data": {"x": NaN}}'
    assert call(slave_app, "/slave/task", raw=bad)[0] == 400
    assert call(slave_app, "/slave/task", {**task, "extra": 1})[0] == 400
    assert call(slave_app, "/slave/task", {**task, "name": "unknown_task"})[0] == 400
    status, envelope = call(slave_app, "/slave/task", task)
    assert status == 200 and envelope == {
        "success": True,
        "code": 0,
        "message": "ok",
        "data": {"queued": 1},
    }
    status, envelope = call(slave_app, "/slave/task", task)
    assert status == 409 and envelope["code"] == 4090 and envelope["data"] is None


def test_master_route_errors():
    master = Master(token=TOKEN)
    app = master.app
    try:
        register = {"worker_id": "w0", "role": "learner", "address": "127.0.0.1:9"}
        status, envelope = call(app, protocol.MASTER_REGISTER, register)
        assert status == 200 and set(envelope["data"]) == {"worker_id", "heartbeat_tolerance"}
        assert call(app, protocol.MASTER_REGISTER, register)[0] == 200  # a refresh
        assert call(app, protocol.MASTER_REGISTER, {**register, "role": "collector"})[0] == 409
        elsewhere = {**register, "address": "127.0.0.1:10"}
        assert call(app, protocol.MASTER_REGISTER, elsewhere)[0] == 409  # a live holder
        assert call(app, protocol.MASTER_REGISTER, {**register, "address": "x"})[0] == 400
        for bad_id in ("..", ".", "a/b", "w:0", "x" * 65):
            body = {**register, "worker_id": bad_id}
            assert call(app, protocol.MASTER_REGISTER, body)[0] == 400, bad_id
        assert call(app, protocol.MASTER_REGISTER, {**register, "worker_id": "x" * 64})[0] == 200
        status, envelope = call(app, protocol.MASTER_HEARTBEAT, {"worker_id": "w0"})
        assert status == 200 and envelope["data"] == {"address": "127.0.0.1:9"}
        assert call(app, protocol.MASTER_HEARTBEAT, {"worker_id": "w9"})[0] == 404
        result = {"task_id": "t", "worker_id": "w0", "success": True, "result": {}, "error": ""}
        assert call(app, protocol.MASTER_TASK_RESULT, result)[0] == 404
        assert call(app, protocol.MASTER_DEREGISTER, {"worker_id": "w0"})[0] == 200
        assert call(app, protocol.MASTER_DEREGISTER, {"worker_id": "w0"})[0] == 404
    finally:
        master.stop()
    assert protocol.WORKER_ID_RULE.startswith("1-64 characters from letters, digits and . _ -")


def test_worker_ids_outside_the_rule_are_refused_before_registering():
    for bad_id in ("..", "a/b"):
        with pytest.raises(ConfigError, match="worker id must be"):
            Slave("collector", bad_id, "127.0.0.1:9", handlers={"x": dict}, token=TOKEN)


def test_client_retries_a_refused_call_three_times_after_0_01_and_02_s():
    retry = HttpClient("127.0.0.1:9", TOKEN)._session.get_adapter("http://x").max_retries
    assert retry.total == 3 and retry.read is False
    assert set(retry.status_forcelist) == {502, 503, 504}
    waits = []
    for _ in range(3):
        retry = retry.increment(method="POST", url="/")
        waits.append(retry.get_backoff_time())
    assert waits == [0, 0.1, 0.2]
