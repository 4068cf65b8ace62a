"""A real Master and real Slaves on 127.0.0.1: tasks, failures, timeouts, lost workers, stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from helpers import TOKEN, free_port, port_is_free, wait_for
from interaction_helpers import FakeWorker, our_threads

from ding_lite.interaction import (
    SLAVES,
    CollectorSlave,
    HttpClient,
    LearnerSlave,
    Master,
    RegistrationError,
    ServerError,
    Slave,
    TaskResult,
    WorkerInfo,
)

pytestmark = pytest.mark.timeout(30)

MakeMaster = Callable[..., Master]
MakeSlave = Callable[..., Slave]


def boom(data: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError(f"boom {data.get('n')}")


def register_fake(master: Master, worker: FakeWorker, worker_id: str = "w0") -> None:
    with HttpClient(master.address, TOKEN) as client:
        body = {"worker_id": worker_id, "role": "collector", "address": worker.server.address}
        client.post("/master/register", body)


def test_register_and_echo_round_trip(make_master: MakeMaster, make_slave: MakeSlave) -> None:
    registered: list[WorkerInfo] = []
    master = make_master(on_register=registered.append)
    slave = make_slave(master, "learner0", role="learner")
    assert wait_for(lambda: len(registered) == 1)
    (info,) = master.workers()
    assert (info.worker_id, info.role, info.address, info.alive) == (
        "learner0",
        "learner",
        slave.address,
        True,
    )
    assert [(w.worker_id, w.role, w.address) for w in registered] == [
        ("learner0", "learner", slave.address)
    ]
    assert master.workers(role="collector") == []
    assert master.worker_ids() == master.worker_ids("learner") == ["learner0"]
    result = master.send_task("learner0", "echo", {"batch": [1, 2, 3], "nested": {"a": "b"}})
    assert isinstance(result, TaskResult)
    assert result.success and result.error == ""
    assert result.result == {"batch": [1, 2, 3], "nested": {"a": "b"}}
    assert (result.worker_id, result.name) == ("learner0", "echo")
    assert 0 < result.elapsed_s < 5
    assert master.pending_tasks() == {}
    with HttpClient(slave.address, TOKEN) as client:
        assert client.post("/slave/ping", {})["worker_id"] == "learner0"


def test_learner_and_collector_slaves_register_under_their_roles(
    make_master: MakeMaster, stack: list[Any]
) -> None:
    """DI-engine's names: the worker process serves its tasks through one of these."""
    master = make_master()
    for cls, worker_id in ((LearnerSlave, "learner0"), (CollectorSlave, "collector0")):
        slave = cls(worker_id, master.address, handlers={"echo": lambda d: d}, token=TOKEN)
        stack.append(slave.start())
    assert wait_for(lambda: len(master.workers()) == 2)
    assert master.worker_ids("learner") == ["learner0"]
    assert master.worker_ids("collector") == ["collector0"]
    assert master.send_task("learner0", "echo", {"n": 1}).result == {"n": 1}
    assert SLAVES == {"learner": LearnerSlave, "collector": CollectorSlave}


def test_heartbeats_keep_a_worker_alive(make_master: MakeMaster, make_slave: MakeSlave) -> None:
    lost: list[WorkerInfo] = []
    master = make_master(heartbeat_tolerance=0.5, on_worker_lost=lost.append)
    make_slave(master, heartbeat_period=0.05)
    time.sleep(1.0)  # several tolerances
    assert lost == [] and [w.alive for w in master.workers()] == [True]


def test_handler_error_is_a_failed_result_and_the_slave_goes_on(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    master = make_master()
    make_slave(master, handlers={"echo": lambda d: d, "boom": boom, "bad": lambda d: {1, 2}})
    started = time.monotonic()
    result = master.send_task("c0", "boom", {"n": 7}, timeout=5)
    assert time.monotonic() - started < 5
    assert not result.success and result.error == "RuntimeError: boom 7" and result.result == {}
    result = master.send_task("c0", "bad", {}, timeout=5)
    assert not result.success and result.error.startswith("TypeError:")
    assert master.send_task("c0", "echo", {"again": True}, timeout=5).result == {"again": True}


def test_timeout_gives_a_failed_result_without_hanging(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    release = threading.Event()
    master = make_master()

    def stuck(data: dict[str, Any]) -> dict[str, Any]:
        release.wait(10)
        return {"late": True}

    make_slave(master, handlers={"stuck": stuck, "echo": lambda d: d})
    started = time.monotonic()
    result = master.send_task("c0", "stuck", {}, timeout=0.3)
    elapsed = time.monotonic() - started
    assert not result.success and result.error == "timed out after 0.3 s"
    assert 0.29 < elapsed < 2.0
    assert master.pending_tasks() == {}  # forgotten; the late result will get 404
    release.set()
    # Tasks of a slave run in order: the next one runs once the stuck one returns.
    assert master.send_task("c0", "echo", {"next": 1}, timeout=5).result == {"next": 1}


def test_unknown_task_name_and_unknown_worker_fail_at_once(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    master = make_master()
    make_slave(master)
    result = master.send_task("c0", "nope", {}, timeout=5)
    assert not result.success and "could not deliver task" in result.error
    assert "unknown task 'nope'" in result.error
    result = master.send_task("ghost", "echo", {}, timeout=5)
    assert not result.success and result.error == "unknown worker 'ghost'"
    with pytest.raises(ValueError, match="JSON"):
        master.send_task("c0", "echo", {"x": float("inf")})
    assert master.pending_tasks() == {}


def test_send_task_async_to_many_collectors(make_master: MakeMaster, make_slave: MakeSlave) -> None:
    master = make_master()
    for i in range(3):
        make_slave(master, f"c{i}", handlers={"sync": lambda d, i=i: {"from": i, **d}})
    futures = [
        master.send_task_async(w.worker_id, "sync", {"version": 4}, timeout=5)
        for w in master.workers(role="collector")
    ]
    results = [f.result(timeout=10) for f in futures]
    assert [r.result for r in results] == [{"from": i, "version": 4} for i in range(3)]


def test_stopped_heartbeats_make_the_worker_lost(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    lost: list[WorkerInfo] = []
    tolerance = 0.5
    master = make_master(heartbeat_tolerance=tolerance, on_worker_lost=lost.append)
    slave = make_slave(master)
    slave.stop(deregister=False)  # like a crash: no goodbye
    stopped = time.monotonic()
    assert wait_for(lambda: lost, timeout=tolerance + 2.0)
    assert time.monotonic() - stopped < tolerance + 1.0
    assert [(w.worker_id, w.alive) for w in lost] == [("c0", False)]
    assert master.workers() == []


def test_pending_task_of_a_lost_worker_fails_at_once(
    make_master: MakeMaster, fake_worker: FakeWorker
) -> None:
    master = make_master(heartbeat_tolerance=0.3)
    register_fake(master, fake_worker)  # never heartbeats, never answers tasks
    started = time.monotonic()
    result = master.send_task("w0", "job", {}, timeout=20)
    assert (result.success, result.error) == (False, "worker lost")
    assert time.monotonic() - started < 2.0
    assert len(fake_worker.tasks) == 1


def test_deregistered_worker_is_gone_and_not_lost(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    lost: list[WorkerInfo] = []
    master = make_master(heartbeat_tolerance=0.3, on_worker_lost=lost.append)
    slave = make_slave(master)
    slave.stop()
    assert master.workers() == []
    time.sleep(0.5)
    assert lost == []


def test_slave_registers_again_when_the_master_forgot_it(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    registered: list[WorkerInfo] = []
    master = make_master(heartbeat_tolerance=0.2, on_register=registered.append)
    make_slave(master, heartbeat_period=0.5)  # too slow for the tolerance: dropped, then back
    assert wait_for(lambda: len(registered) >= 2, timeout=5)
    assert wait_for(lambda: [w.worker_id for w in master.workers()] == ["c0"], timeout=5)


def test_master_stop_fails_waiting_tasks(make_master: MakeMaster, fake_worker: FakeWorker) -> None:
    master = make_master()
    register_fake(master, fake_worker)
    future = master.send_task_async("w0", "job", {}, timeout=20)
    assert wait_for(lambda: master.pending_tasks())
    started = time.monotonic()
    master.stop()
    assert future.result(timeout=5).error == "master stopped"
    assert time.monotonic() - started < 3
    assert master.send_task("w0", "job", {}).error == "master stopped"
    with pytest.raises(ServerError, match="build a new one"):
        master.start()


def test_stop_frees_ports_and_threads(make_master: MakeMaster, make_slave: MakeSlave) -> None:
    master = make_master()
    slaves = [make_slave(master, f"c{i}") for i in range(2)]
    assert master.send_task("c1", "echo", {"x": 1}).success
    ports = [int(x.address.rsplit(":", 1)[1]) for x in [master, *slaves]]
    assert our_threads()
    for slave in slaves:
        slave.stop()
    master.stop()
    assert all(port_is_free(port) for port in ports)
    assert wait_for(lambda: not our_threads(), timeout=2.0), our_threads()


def test_slave_without_a_master_fails_clearly_and_cleans_up() -> None:
    address = f"127.0.0.1:{free_port()}"
    slave = Slave("collector", "c0", address, token=TOKEN, handlers={"e": dict},
                  register_timeout=0.5)  # fmt: skip
    started = time.monotonic()
    with pytest.raises(RegistrationError, match="did not answer within 0.5 s"):
        slave.start()
    assert time.monotonic() - started < 3
    assert our_threads() == []


def test_slave_with_the_wrong_token_is_refused_at_once(make_master: MakeMaster) -> None:
    master = make_master()
    slave = Slave("collector", "c0", master.address, token="other-token", handlers={"e": dict})
    with pytest.raises(RegistrationError, match="same token"):
        slave.start()
    assert master.workers() == []
