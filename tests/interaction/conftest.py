"""Fixtures of the interaction tests: servers that are always stopped, and a leak check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import TOKEN, wait_for
from interaction_helpers import FakeWorker, our_threads

from ding_lite.interaction import Master, Slave


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every test must stop what it started: no ``ding_lite-`` thread outlives it."""
    yield
    assert wait_for(lambda: not our_threads(), timeout=2.0), our_threads()


@pytest.fixture
def stack() -> Iterator[list[Any]]:
    """Things with ``stop()`` to stop at teardown, last started first."""
    started: list[Any] = []
    yield started
    for thing in reversed(started):
        thing.stop()


@pytest.fixture
def make_master(stack: list[Any]) -> Callable[..., Master]:
    """Builds and starts a Master on a free port; stopped at teardown."""

    def make(**kwargs: Any) -> Master:
        kwargs.setdefault("token", TOKEN)
        master = Master(**kwargs)
        stack.append(master)
        return master.start()

    return make


@pytest.fixture
def make_slave(stack: list[Any]) -> Callable[..., Slave]:
    """Builds and starts a Slave on a free port; stopped at teardown (twice is harmless)."""

    def make(master: Master, worker_id: str = "c0", role: str = "collector", **kw: Any) -> Slave:
        kw.setdefault("token", TOKEN)
        kw.setdefault("heartbeat_period", 0.1)
        kw.setdefault("handlers", {"echo": lambda data: data})
        slave = Slave(role, worker_id, master.address, **kw)
        slave.start()
        stack.append(slave)
        return slave

    return make


@pytest.fixture
def fake_worker(stack: list[Any]) -> FakeWorker:
    """A started :class:`FakeWorker`; stopped at teardown."""
    worker = FakeWorker()
    worker.server.start()
    stack.append(worker)
    return worker
