"""Every route of Master and Slave refuses bad requests with a 4xx envelope and changes nothing.

Requests go through Flask's test client; only ``/master/task_result`` needs real servers, since
a pending task exists only after the master sent one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Flask
from helpers import TOKEN, wait_for
from interaction_helpers import FakeWorker, call

from ding_lite.interaction import Master, Slave
from ding_lite.interaction.protocol import (
    DEREGISTER_SCHEMA,
    HEARTBEAT_SCHEMA,
    PING_SCHEMA,
    REGISTER_SCHEMA,
    TASK_RESULT_SCHEMA,
    TASK_SCHEMA,
)

MAX_BODY = 4096
WRONG_VALUE = {str: 123, bool: "true", dict: [1]}


@dataclass
class Route:
    """One route under test: its good body and a snapshot of the state it may change."""

    app: Flask
    path: str
    schema: dict[str, type]
    good: dict[str, Any]
    state: Callable[[], Any]
    after_good: Callable[[], None] = field(default=lambda: None)


def register(master: Master, worker_id: str = "c0", address: str = "127.0.0.1:9") -> None:
    body = {"worker_id": worker_id, "role": "collector", "address": address}
    assert call(master.app, "/master/register", body)[0] == 200


def bad_requests(route: Route) -> list[tuple[str, dict[str, Any], int, str]]:
    """(case id, ``call`` kwargs, expected status, fragment of the message)."""
    good = route.good
    cases = [
        ("no token", {"body": good, "token": None}, 401, "bearer token"),
        ("wrong token", {"body": good, "token": "nope"}, 401, "bearer token"),
        ("malformed", {"raw": b'{"worker_id": '}, 400, "malformed JSON"),
        ("not utf-8", {"raw": b'{"a": "\xff"}'}, 400, "malformed JSON"),
        ("NaN", {"raw": b'{"a": NaN}'}, 400, "malformed JSON"),
        ("text/plain", {"body": good, "content_type": "text/plain"}, 400, "Content-Type"),
        ("array", {"body": [good]}, 400, "JSON object"),
        ("extra field", {"body": {**good, "zzz": 1}}, 400, "unknown field 'zzz'"),
        ("too large", {"body": {**good, "pad": "x" * MAX_BODY}}, 413, "exceeds the limit"),
        ("GET", {"body": good, "method": "GET"}, 405, "not allowed"),
    ]
    for name, types in route.schema.items():
        missing = {k: v for k, v in good.items() if k != name}
        cases.append((f"missing {name}", {"body": missing}, 400, f"missing field '{name}'"))
        wrong = {**good, name: WRONG_VALUE[types]}
        cases.append((f"wrong type {name}", {"body": wrong}, 400, f"field '{name}' must be"))
    return cases


def new_master() -> Master:
    return Master(token=TOKEN, max_body_bytes=MAX_BODY)


def new_slave(calls: list[dict[str, Any]]) -> Slave:
    handlers = {"echo": lambda data: calls.append(data) or data}
    return Slave("collector", "c0", "127.0.0.1:9", token=TOKEN, handlers=handlers,
                 max_body_bytes=MAX_BODY)  # fmt: skip


def route_register() -> Route:
    master = new_master()
    good = {"worker_id": "c0", "role": "collector", "address": "127.0.0.1:9"}
    return Route(master.app, "/master/register", REGISTER_SCHEMA, good, master.workers)


def route_heartbeat() -> Route:
    master = new_master()
    register(master)
    good = {"worker_id": "c0"}
    return Route(master.app, "/master/heartbeat", HEARTBEAT_SCHEMA, good, master.workers)


def route_deregister() -> Route:
    master = new_master()
    register(master)
    good = {"worker_id": "c0"}
    return Route(master.app, "/master/deregister", DEREGISTER_SCHEMA, good, master.workers)


def route_slave_task() -> Route:
    calls: list[dict[str, Any]] = []
    slave = new_slave(calls)
    good = {"task_id": "t1", "name": "echo", "data": {"x": 1}}

    def after_good() -> None:
        assert slave.queued_tasks() == 1 and calls == []  # queued; not started, so not run

    def state() -> tuple[int, list]:
        return slave.queued_tasks(), list(calls)

    return Route(slave.app, "/slave/task", TASK_SCHEMA, good, state, after_good)


def route_slave_ping() -> Route:
    slave = new_slave([])
    return Route(slave.app, "/slave/ping", PING_SCHEMA, {}, lambda: slave.queued_tasks())


def check_route(route: Route) -> None:
    before = route.state()
    for case_id, kwargs, status, fragment in bad_requests(route):
        got_status, envelope = call(route.app, route.path, **kwargs)
        assert got_status == status, (case_id, envelope)
        assert envelope["success"] is False and envelope["data"] is None, case_id
        assert envelope["code"] == status * 10, case_id
        assert fragment in envelope["message"], (case_id, envelope["message"])
        assert route.state() == before, f"{case_id} changed the state"
    got_status, envelope = call(route.app, route.path, route.good)
    assert (got_status, envelope["success"], envelope["code"]) == (200, True, 0), envelope
    route.after_good()


@pytest.mark.parametrize(
    "build",
    [route_register, route_heartbeat, route_deregister, route_slave_task, route_slave_ping],
    ids=["register", "heartbeat", "deregister", "slave_task", "slave_ping"],
)
def test_route_refuses_bad_requests_and_changes_nothing(build: Callable[[], Route]) -> None:
    check_route(build())


@pytest.mark.timeout(30)
def test_task_result_refuses_bad_requests_and_changes_nothing(
    make_master: Callable[..., Master], fake_worker: FakeWorker
) -> None:
    master = make_master(max_body_bytes=MAX_BODY)
    register(master, "w0", fake_worker.server.address)
    future = master.send_task_async("w0", "job", {"n": 1}, timeout=20)
    assert wait_for(lambda: len(master.pending_tasks()) == 1)
    (task_id,) = master.pending_tasks()
    good = {"task_id": task_id, "worker_id": "w0", "success": True, "result": {"v": 1}, "error": ""}

    def after_good() -> None:
        result = future.result(timeout=5)
        assert (result.success, result.result, result.task_id) == (True, {"v": 1}, task_id)
        assert master.pending_tasks() == {}

    check_route(
        Route(
            master.app,
            "/master/task_result",
            TASK_RESULT_SCHEMA,
            good,
            master.pending_tasks,
            after_good,
        )  # fmt: skip
    )
    assert fake_worker.tasks == [{"task_id": task_id, "name": "job", "data": {"n": 1}}]


@pytest.mark.timeout(30)
def test_task_result_checks_task_and_worker(
    make_master: Callable[..., Master], fake_worker: FakeWorker
) -> None:
    master = make_master()
    register(master, "w0", fake_worker.server.address)
    register(master, "w1", fake_worker.server.address)
    future = master.send_task_async("w0", "job", {}, timeout=20)
    assert wait_for(lambda: len(master.pending_tasks()) == 1)
    (task_id,) = master.pending_tasks()
    body = {"task_id": task_id, "worker_id": "w1", "success": True, "result": {}, "error": ""}
    status, envelope = call(master.app, "/master/task_result", body)
    assert status == 400 and "was sent to worker 'w0', not 'w1'" in envelope["message"]
    status, envelope = call(master.app, "/master/task_result", {**body, "task_id": "nope"})
    assert status == 404 and "unknown task 'nope'" in envelope["message"]
    assert master.pending_tasks() == {task_id: "w0"}
    body.update(worker_id="w0", success=False, error="ValueError: bad")
    assert call(master.app, "/master/task_result", body)[0] == 200
    result = future.result(timeout=5)
    assert (result.success, result.error) == (False, "ValueError: bad")
    # A second report of the same task (e.g. a retry) finds nothing to resolve.
    assert call(master.app, "/master/task_result", body)[0] == 404


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"worker_id": "c0", "role": "boss", "address": "127.0.0.1:9"}, 400, "'role'"),
        ({"worker_id": "c 0", "role": "learner", "address": "127.0.0.1:9"}, 400, "'worker_id'"),
        ({"worker_id": "", "role": "learner", "address": "127.0.0.1:9"}, 400, "'worker_id'"),
        ({"worker_id": "c0", "role": "learner", "address": "nohost"}, 400, "'address'"),
        ({"worker_id": "c0", "role": "learner", "address": "h:0"}, 400, "'address'"),
        ({"worker_id": "c0", "role": "learner", "address": "h:1/x"}, 400, "'address'"),
        ({"worker_id": "c0", "role": "learner", "address": "ftp://h:1"}, 400, "'address'"),
    ],
)
def test_register_checks_values(body: dict, status: int, fragment: str) -> None:
    master = new_master()
    got, envelope = call(master.app, "/master/register", body)
    assert got == status and fragment in envelope["message"]
    assert master.workers() == []


def test_register_again_from_the_same_address_refreshes_but_keeps_the_role() -> None:
    master = new_master()
    register(master, "c0", "127.0.0.1:9")
    first_seen = master.workers()[0].last_seen
    register(master, "c0", "127.0.0.1:9")
    assert [(w.worker_id, w.address, w.alive) for w in master.workers()] == [
        ("c0", "127.0.0.1:9", True)
    ]
    assert master.workers()[0].last_seen > first_seen
    body = {"worker_id": "c0", "role": "learner", "address": "127.0.0.1:9"}
    status, envelope = call(master.app, "/master/register", body)
    assert status == 409 and "registered as a collector" in envelope["message"]
    assert master.workers()[0].role == "collector"
    assert master.workers(role="learner") == []


@pytest.mark.parametrize("path", ["/master/heartbeat", "/master/deregister"])
def test_unknown_worker_is_404(path: str) -> None:
    master = new_master()
    status, envelope = call(master.app, path, {"worker_id": "ghost"})
    assert status == 404 and envelope["code"] == 4040 and "'ghost'" in envelope["message"]


def test_deregister_removes_the_worker() -> None:
    master = new_master()
    register(master)
    assert call(master.app, "/master/deregister", {"worker_id": "c0"})[0] == 200
    assert master.workers() == []


def test_slave_task_refuses_unknown_names_bad_ids_and_duplicates() -> None:
    slave = new_slave([])
    status, envelope = call(slave.app, "/slave/task", {"task_id": "t1", "name": "x", "data": {}})
    assert (
        status == 400
        and "unknown task 'x'" in envelope["message"]
        and "echo" in envelope["message"]
    )
    status, envelope = call(
        slave.app, "/slave/task", {"task_id": "t/1", "name": "echo", "data": {}}
    )
    assert status == 400 and "'task_id'" in envelope["message"]
    assert slave.queued_tasks() == 0
    good = {"task_id": "t1", "name": "echo", "data": {}}
    assert call(slave.app, "/slave/task", good) == (200, call_ok({"queued": 1}))
    status, envelope = call(slave.app, "/slave/task", good)
    assert status == 409 and envelope["code"] == 4090 and "already" in envelope["message"]
    assert slave.queued_tasks() == 1


def call_ok(data: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "code": 0, "message": "ok", "data": data}


def test_slave_ping_answers_who_it_is() -> None:
    status, envelope = call(new_slave([]).app, "/slave/ping", {})
    assert status == 200
    assert envelope["data"]["worker_id"] == "c0" and envelope["data"]["role"] == "collector"


@pytest.mark.parametrize("token", [TOKEN, None])
def test_unknown_route_is_an_envelope(token: str | None) -> None:
    status, envelope = call(new_master().app, "/master/nope", {}, token=token)
    # Without the token even the route's existence is not revealed.
    expected = 404 if token else 401
    assert status == expected and envelope["code"] == expected * 10
    assert envelope["success"] is False
