"""The processes of a parallel run, without starting one: the worker command's options and
defaults, a worker that loses its coordinator or its id, the master's client timeout, and
what the coordinator process leaves in the run dir when it ends."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from types import SimpleNamespace

import pytest
from helpers import TOKEN

from ding_lite.config import compile_config
from ding_lite.coordinator import RunStatus
from ding_lite.entry.cli import arguments
from ding_lite.entry.pipelines import coordinator_process, parallel, worker_process
from ding_lite.entry.run.dir_lock import lock_run_dir
from ding_lite.interaction import Slave
from ding_lite.interaction.client import DEFAULT_TIMEOUT
from ding_lite.utils import stop


def test_worker_options_and_defaults():
    parser = arguments.build_parser()
    for role in ("learner", "collector"):
        args = parser.parse_args([role, "--coordinator", "127.0.0.1:1"])
        assert args.worker_id == f"{role}-{socket.gethostname()}-{os.getpid()}"
        assert args.port == 0 and args.master_timeout == 60.0 and args.heartbeat_period == 1.0
        assert args.host == "127.0.0.1"


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

    monkeypatch.setattr(worker_process, "SLAVES", {"collector": FakeSlave})
    monkeypatch.setattr(worker_process, "FlaskFileSystemCollector", FakeWorker)
    monkeypatch.setattr(worker_process, "setup_console_logging", levels.append)
    code = worker_process.run_worker(
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


def test_a_worker_whose_id_was_taken_over_stops(monkeypatch, caplog):
    reason = "worker id 'c0' is in use by a live collector at 127.0.0.1:5; pick another --worker-id"

    class EvictedSlave:
        evicted = reason

        def __init__(self, *args, **kwargs):
            self.last_contact = time.monotonic()  # the master answered just now

    monkeypatch.setattr(worker_process, "SLAVES", {"collector": EvictedSlave})
    monkeypatch.setattr(worker_process, "FlaskFileSystemCollector", FakeWorker)
    monkeypatch.setattr(worker_process, "setup_console_logging", lambda level: None)
    with caplog.at_level(logging.ERROR, logger="ding_lite"):
        code = worker_process.run_worker(
            "collector", coordinator="127.0.0.1:1", worker_id="c0", token=TOKEN
        )
    assert code == 1 and f"stopping: {reason}" in caplog.text


def test_master_reads_worker_answers_for_http_timeout(monkeypatch):
    seen = {}

    class FakeMaster:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def start(self):
            return self

    monkeypatch.setattr(coordinator_process, "Master", FakeMaster)
    cfg = compile_config("cartpole_ppo_parallel", ["system.http_timeout=7"])
    coordinator_process.start_master(cfg, TOKEN)
    assert seen["client_timeout"] == (3.05, 7.0)


@pytest.mark.parametrize("interrupted", [False, True])
def test_run_coordinator_tidies_path_data_and_writes_result(tmp_path, monkeypatch, interrupted):
    cfg = parallel.compile_parallel_config(
        "cartpole_ppo_parallel", exp_dir=str(tmp_path / "run"), overrides=[]
    )
    cfg.system.token = TOKEN
    data = tmp_path / "run" / "data"  # the run places its shared folders when it claims its dir
    temp = data / "c9" / ".00000000_v0_n4.pt.tmp"  # a collector killed mid-write
    temp.parent.mkdir(parents=True)
    temp.write_bytes(b"x")
    (data / "c8").mkdir()
    waits = []

    class FakeCoordinator:
        def __init__(self, *args, **kwargs):
            self.status = RunStatus(stop_reason="max_train_iter")
            self.state = SimpleNamespace(started_at=time.time(), cpu_s=0.0)

        def save(self, kind):
            pass

        def finish(self):
            pass

        def run(self, wait_workers):
            waits.append(wait_workers)
            if interrupted:
                self.status.stop_reason = "interrupted"
                raise KeyboardInterrupt
            return self.status

    monkeypatch.setattr(coordinator_process, "Coordinator", FakeCoordinator)
    if interrupted:
        with pytest.raises(stop.RunInterrupted):
            coordinator_process.run_coordinator(cfg, progress=False)
    else:
        result = coordinator_process.run_coordinator(cfg, progress=False)
        assert result["stop_reason"] == "max_train_iter"
    if interrupted:  # before its first checkpoint: what the run wrote is removed
        assert not (tmp_path / "run" / "result.json").exists()
        assert not (tmp_path / "run" / "config.json").exists()
    else:
        saved = json.loads((tmp_path / "run" / "result.json").read_text())
        assert saved["stop_reason"] == "max_train_iter"
    assert waits == [cfg.system.join_timeout] == [120.0]
    assert not any(data.iterdir())  # temp files and empty collector folders removed
    lock_run_dir(tmp_path / "run").release()  # the run let go of its dir
