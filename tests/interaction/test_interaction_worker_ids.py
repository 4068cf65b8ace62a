"""Worker ids: the strict pattern on every route, and one live worker per id.

A worker id names the worker's data folder, so it must be a single plain path component; and
it names one process, so a second process cannot take it while the first is alive.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from helpers import TOKEN, free_port, port_is_free, wait_for
from interaction_helpers import call

from ding_lite.interaction import HttpClient, Master, RegistrationError, RemoteError, Slave
from ding_lite.interaction.envelope import ApiError
from ding_lite.interaction.protocol import (
    WORKER_ID_RULE,
    is_valid_worker_id,
)
from ding_lite.interaction.roster import Roster
from ding_lite.utils.errors import ConfigError

pytestmark = pytest.mark.timeout(60)

MakeMaster = Callable[..., Master]
MakeSlave = Callable[..., Slave]

BAD_IDS = [".", "..", "a" * 65, "a/b", "a\\b", "../x", "c 0", "", "c0\n", "c:0", "c@0", "é"]
GOOD_IDS = ["a", "a" * 64, "collector._-0", "...", ".hidden", "learner-a.r2", "A_9"]


def register_body(worker_id: str, address: str = "127.0.0.1:9", role: str = "collector") -> dict:
    return {"worker_id": worker_id, "role": role, "address": address}


@pytest.mark.parametrize("worker_id", BAD_IDS)
def test_bad_worker_ids_are_refused_on_every_route(worker_id: str) -> None:
    master = Master(token=TOKEN)
    bodies = {
        "/master/register": register_body(worker_id),
        "/master/heartbeat": {"worker_id": worker_id},
        "/master/deregister": {"worker_id": worker_id},
        "/master/task_result": {
            "task_id": "t1",
            "worker_id": worker_id,
            "success": True,
            "result": {},
            "error": "",
        },
    }
    assert not is_valid_worker_id(worker_id)
    for path, body in bodies.items():
        status, envelope = call(master.app, path, body)
        assert status == 400, (path, envelope)
        assert "field 'worker_id' must be 1-64 characters" in envelope["message"], path
        assert "not '.' or '..'" in envelope["message"] and "\n" not in envelope["message"]
    assert master.workers() == [] and master.pending_tasks() == {}
    with pytest.raises(ConfigError, match="worker id must be 1-64 characters"):
        Slave("collector", worker_id, "127.0.0.1:9", token=TOKEN, handlers={"x": dict})


@pytest.mark.parametrize("worker_id", GOOD_IDS)
def test_good_worker_ids_register(worker_id: str) -> None:
    master = Master(token=TOKEN)
    assert is_valid_worker_id(worker_id)
    status, envelope = call(master.app, "/master/register", register_body(worker_id))
    assert status == 200, envelope
    assert master.worker_ids() == [worker_id]
    assert call(master.app, "/master/heartbeat", {"worker_id": worker_id})[0] == 200
    assert call(master.app, "/master/deregister", {"worker_id": worker_id})[0] == 200
    assert master.workers() == []


def test_the_rule_text_names_what_is_allowed() -> None:
    assert "64" in WORKER_ID_RULE and "'..'" in WORKER_ID_RULE and ". _ -" in WORKER_ID_RULE


def test_a_live_id_from_another_address_is_409_and_changes_nothing() -> None:
    master = Master(token=TOKEN)
    assert call(master.app, "/master/register", register_body("c0", "127.0.0.1:9"))[0] == 200
    before = master.workers()
    status, envelope = call(master.app, "/master/register", register_body("c0", "127.0.0.1:10"))
    assert (status, envelope["code"]) == (409, 4090)
    assert envelope["message"] == (
        "worker id 'c0' is in use by a live collector at 127.0.0.1:9; pick another --worker-id"
    )
    assert master.workers() == before  # same address, same last_seen: nothing changed
    # Another role from another address is refused the same way.
    status, _ = call(master.app, "/master/register", register_body("c0", "127.0.0.1:10", "learner"))
    assert status == 409 and master.workers() == before


def test_a_silent_id_may_be_taken_over_and_its_tasks_fail() -> None:
    registry = Roster(0.2, lambda address: HttpClient(address, TOKEN))
    info, replaced = registry.register("c0", "collector", "127.0.0.1:9")
    assert replaced is None and info.alive
    entry, client = registry.open_task("c0", "job")
    assert client is not None
    with pytest.raises(ApiError, match="in use by a live collector"):
        registry.register("c0", "collector", "127.0.0.1:10")
    time.sleep(0.3)  # past the tolerance: c0 is silent now
    info, replaced = registry.register("c0", "collector", "127.0.0.1:10")
    assert (info.address, info.alive) == ("127.0.0.1:10", True)
    assert replaced is not None and (replaced.address, replaced.alive) == ("127.0.0.1:9", False)
    assert entry.done.is_set() and entry.result is not None
    assert (entry.result.success, entry.result.error) == (False, "worker lost")
    assert registry.pending() == {}
    registry.close("test over")


def test_a_silent_id_taken_over_reports_the_old_worker_lost(stack: list[Any]) -> None:
    lost: list[str] = []
    registered: list[str] = []
    # Not started yet, so no monitor drops c0 before the second registration takes it over.
    master = Master(
        token=TOKEN,
        heartbeat_tolerance=0.2,
        on_worker_lost=lambda info: lost.append(info.address),
        on_register=lambda info: registered.append(info.address),
    )
    stack.append(master)
    assert call(master.app, "/master/register", register_body("c0", "127.0.0.1:9"))[0] == 200
    time.sleep(0.3)
    assert call(master.app, "/master/register", register_body("c0", "127.0.0.1:10"))[0] == 200
    assert [w.address for w in master.workers()] == ["127.0.0.1:10"]
    master.start()  # its event thread now runs the queued callbacks, in order
    assert wait_for(lambda: len(registered) == 2)
    assert registered == ["127.0.0.1:9", "127.0.0.1:10"] and lost[0] == "127.0.0.1:9"


@pytest.mark.timeout(30)
def test_a_second_slave_with_a_live_id_fails_to_start(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    master = make_master()
    first = make_slave(master, "collector0")
    second = Slave(
        "collector",
        "collector0",
        master.address,
        token=TOKEN,
        handlers={"echo": dict},
        register_timeout=5,
    )
    with pytest.raises(RegistrationError) as caught:
        second.start()
    message = str(caught.value)
    assert "\n" not in message and "POST " not in message
    assert f"in use by a live collector at {first.address}; pick another --worker-id" in message
    assert [(w.worker_id, w.address) for w in master.workers()] == [("collector0", first.address)]
    assert not second._server.running
    # The first worker still gets its tasks.
    result = master.send_task("collector0", "echo", {"n": 1}, timeout=5)
    assert (result.success, result.result) == (True, {"n": 1})


@pytest.mark.timeout(30)
def test_a_worker_whose_id_was_taken_stops_its_heartbeats(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    master = make_master()
    first = make_slave(master, "c0", heartbeat_period=1.0)
    # Right after a heartbeat (so none comes in between), the master forgets c0, as after a
    # restart, and another process registers the id from elsewhere.
    contact = first.last_contact
    assert wait_for(lambda: first.last_contact != contact)
    with HttpClient(master.address, TOKEN) as client:
        client.post("/master/deregister", {"worker_id": "c0"})
        client.post("/master/register", register_body("c0", "127.0.0.1:9"))
    # The first one's next heartbeat learns that c0 is registered elsewhere: it bows out.
    assert wait_for(lambda: first.evicted is not None, timeout=5)
    assert first.evicted == (
        "worker id 'c0' is in use by a live collector at 127.0.0.1:9; pick another --worker-id"
    )
    assert wait_for(lambda: not first._heartbeat_thread.is_alive())
    assert [(w.worker_id, w.address) for w in master.workers()] == [("c0", "127.0.0.1:9")]
    first.stop()  # does not deregister the id it lost
    assert [(w.worker_id, w.address) for w in master.workers()] == [("c0", "127.0.0.1:9")]


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DING_LITE_")}
    env["DING_LITE_TOKEN"] = TOKEN
    return env


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_duplicate_worker_process_exits_with_one_line(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    master = make_master()
    holder = make_slave(master, "collector0")
    port = free_port()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ding_lite",
            "collector",
            "--coordinator",
            master.address,
            "--worker-id",
            "collector0",
            "--port",
            str(port),
        ],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert lines == [
        f"ding-lite: error: master at http://{master.address} refused collector 'collector0': "
        f"worker id 'collector0' is in use by a live collector at {holder.address}; "
        "pick another --worker-id"
    ], proc.stderr
    assert port_is_free(port)
    assert [(w.worker_id, w.address) for w in master.workers()] == [("collector0", holder.address)]


def test_result_only_from_the_worker_the_task_went_to(
    make_master: MakeMaster, make_slave: MakeSlave
) -> None:
    release = threading.Event()

    def wait(data: dict[str, Any]) -> dict[str, Any]:
        release.wait(5)
        return data

    master = make_master()
    make_slave(master, "c0", handlers={"wait": wait})
    make_slave(master, "c1")
    future = master.send_task_async("c0", "wait", {"v": 1}, timeout=10)
    assert wait_for(lambda: len(master.pending_tasks()) == 1)
    (task_id,) = master.pending_tasks()
    forged = {"task_id": task_id, "worker_id": "c1", "success": True, "result": {}, "error": ""}
    with HttpClient(master.address, TOKEN) as client:
        with pytest.raises(RemoteError, match="was sent to worker 'c0', not 'c1'"):
            client.post("/master/task_result", forged)
    assert master.pending_tasks() == {task_id: "c0"}
    release.set()
    result = future.result(timeout=10)
    assert (result.success, result.worker_id, result.result) == (True, "c0", {"v": 1})


class _Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def _registry(monkeypatch, tolerance: float = 3.0) -> tuple[Roster, _Clock]:
    fake = _Clock()
    monkeypatch.setattr(time, "monotonic", fake)
    clients: list[Any] = []

    class Client:
        def __init__(self, address: str) -> None:
            self.address = address
            clients.append(self)

        def close(self) -> None:
            pass

    return Roster(tolerance, Client), fake


def test_a_pause_of_the_master_declares_nobody_lost(monkeypatch):
    """The issue: a coordinator paused 20 s declared every worker lost on waking."""
    registry, fake = _registry(monkeypatch)
    paused: list[float] = []
    registry.on_pause = paused.append
    registry.register("c0", "collector", "127.0.0.1:9")
    fake.now += 0.5
    assert registry.pop_lost("worker lost") == []
    fake.now += 20.0  # SIGSTOP ... SIGCONT: nothing ran, no heartbeat was answered
    assert registry.pop_lost("worker lost") == []
    assert [w.alive for w in registry.workers()] == [True] and paused == [20.0]
    assert registry.paused_s == 20.0
    lost = []
    for _ in range(8):  # then it really goes silent: lost after the tolerance, as ever
        fake.now += 0.5
        lost += [(w.worker_id, fake.now) for w in registry.pop_lost("worker lost")]
    assert [w for w, _ in lost] == ["c0"] and lost[0][1] > 5020.5 + 3.0


def test_a_reader_waking_first_also_forgives_the_pause(monkeypatch):
    """The coordinator's loop may look at the workers before the monitor runs again."""
    registry, fake = _registry(monkeypatch)
    registry.register("l0", "learner", "127.0.0.1:9")
    registry.pop_lost("worker lost")
    fake.now += 20.0
    assert [w.alive for w in registry.workers("learner")] == [True]


def test_restored_workers_are_answered_and_a_new_process_takes_an_id_over(monkeypatch):
    """A restarted coordinator knows the old one's workers: a heartbeat is answered as
    before; a new process registering one of the ids takes it over at once (no 409); one
    never heard from is lost after the tolerance."""
    registry, fake = _registry(monkeypatch)
    registry.restore([("c0", "collector", "127.0.0.1:9"), ("c1", "collector", "127.0.0.1:10")])
    assert registry.heartbeat("c0") == "127.0.0.1:9"
    info, replaced = registry.register("c1", "collector", "127.0.0.1:11")
    assert info.address == "127.0.0.1:11" and replaced.address == "127.0.0.1:10"
    with pytest.raises(ApiError):  # c0 was heard from: a live holder is not taken over
        registry.register("c0", "collector", "127.0.0.1:12")
    registry.restore([("c0", "collector", "127.0.0.1:99")])  # known ids stay as they are
    assert registry.heartbeat("c0") == "127.0.0.1:9"


def _tick(registry: Roster, fake: _Clock, seconds: float, beating: tuple[str, ...] = ()):
    """Advances the clock in monitor-sized steps; ``beating`` workers heartbeat throughout.
    Returns ``(worker id, when)`` of each worker declared lost meanwhile."""
    lost = []
    for _ in range(int(seconds / 0.5)):
        fake.now += 0.5
        for worker_id in beating:
            registry.heartbeat(worker_id)
        lost += [(w.worker_id, fake.now) for w in registry.pop_lost("worker lost")]
    return lost


def _cut_off_registry(monkeypatch, *addresses: str) -> tuple[Roster, _Clock, list]:
    registry, fake = _registry(monkeypatch)
    registry.cut_off_tolerance = 12.0
    news: list[tuple[bool, float]] = []
    registry.on_cut_off = lambda starts, seconds: news.append((starts, seconds))
    for n, address in enumerate(addresses):
        registry.register(f"w{n}", "collector", address)
    return registry, fake, news


def test_silence_from_every_remote_worker_is_a_cut_off_not_their_deaths(monkeypatch):
    """The issue: the coordinator's host cut off for 30 s declared every worker lost after
    10 s. Nobody heard, with workers on other hosts: nobody is lost until the cut-off
    tolerance, and the first worker heard again gives every worker a fresh tolerance."""
    registry, fake, news = _cut_off_registry(monkeypatch, "10.0.0.2:7236", "10.0.0.3:7236")
    assert _tick(registry, fake, 10.0) == []
    assert news == [(True, 3.5)] and registry.cut_off_s == 10.0
    registry.heartbeat("w1")  # the link is back: w1's heartbeat arrives first
    assert _tick(registry, fake, 2.5) == []  # w0's may take a moment more
    assert news[1][0] is False and registry.cut_off_s == 0.0
    registry.heartbeat("w0")
    # Back to judging one by one: w1 silent from here on is lost after the tolerance.
    lost = _tick(registry, fake, 5.0, beating=("w0",))
    assert [w for w, _ in lost] == ["w1"]


def test_a_cut_off_longer_than_its_tolerance_loses_everyone(monkeypatch):
    registry, fake, news = _cut_off_registry(monkeypatch, "10.0.0.2:7236", "10.0.0.3:7236")
    lost = _tick(registry, fake, 14.0)
    assert sorted(w for w, _ in lost) == ["w0", "w1"] and lost[0][1] > 5000.0 + 12.0
    assert news == [(True, 3.5)] and registry.cut_off_s == 0.0


def test_silence_is_judged_one_by_one_where_no_cut_off_can_explain_it(monkeypatch):
    """Workers on this host's loopback cannot be cut off from it; a worker silent while
    another is heard is lost after the tolerance; no tolerance set: no cut-off rule."""
    registry, fake, news = _cut_off_registry(monkeypatch, "127.0.0.1:9", "127.0.0.1:10")
    assert len(_tick(registry, fake, 4.0)) == 2 and news == []
    registry, fake, news = _cut_off_registry(monkeypatch, "10.0.0.2:7236", "10.0.0.3:7236")
    lost = _tick(registry, fake, 4.0, beating=("w0",))
    assert [w for w, _ in lost] == ["w1"] and news == []
    registry, fake, news = _cut_off_registry(monkeypatch, "10.0.0.2:7236")
    registry.cut_off_tolerance = 0.0
    assert len(_tick(registry, fake, 4.0)) == 1 and news == []


def test_a_worker_silent_a_moment_before_the_others_waits_for_the_cut_off(monkeypatch):
    """CI found it: the coordinator's host cut off, the collector's last heartbeat 0.5 s
    before the learner's; the collector crossed the tolerance alone and was declared lost
    just before the silence of both showed the cut-off. Its silence proves nothing until
    someone else is heard after its deadline."""
    registry, fake, news = _cut_off_registry(monkeypatch, "10.0.0.2:7236", "10.0.0.3:7236")
    fake.now += 0.5
    registry.heartbeat("w0")  # w0 heard last: w1 reaches the tolerance 0.5 s earlier
    assert _tick(registry, fake, 8.0) == []
    assert news and news[0][0] is True
    # Where the others do get through, the silent one is lost soon after its deadline.
    registry, fake, news = _cut_off_registry(monkeypatch, "10.0.0.2:7236", "10.0.0.3:7236")
    lost = _tick(registry, fake, 5.0, beating=("w0",))
    assert lost == [("w1", 5003.5)] and news == []
