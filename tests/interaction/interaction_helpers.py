"""Helpers shared by the interaction tests (imported by name; tests/ has no packages)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from flask import Flask

from ding_lite.interaction import HttpServer, json_route, make_app
from ding_lite.interaction.server import THREAD_PREFIX

TOKEN = "test-token-0123456789"


def our_threads() -> list[str]:
    """Names of the live threads this package started."""
    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Polls ``predicate`` until it is true or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def port_is_free(port: int) -> bool:
    """Whether 127.0.0.1:port can be bound again."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port nothing listens on (bound and released at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FakeWorker:
    """A bare server that accepts ``/slave/task`` and never answers or heartbeats."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        app = make_app("fake", TOKEN, 1 << 16)
        json_route(app, "/slave/task", {"task_id": str, "name": str, "data": dict})(self._on_task)
        self.server = HttpServer(app, name="fake")

    def _on_task(self, body: dict[str, Any]) -> dict[str, Any]:
        self.tasks.append(body)
        return {}

    def stop(self) -> None:
        self.server.stop()


def call(
    app: Flask,
    path: str,
    body: Any = None,
    *,
    token: str | None = TOKEN,
    raw: bytes | None = None,
    content_type: str = "application/json",
    method: str = "POST",
) -> tuple[int, dict[str, Any]]:
    """Sends one request through Flask's test client; returns (status, envelope)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    data = raw if raw is not None else json.dumps(body).encode()
    response = app.test_client().open(
        path, method=method, data=data, headers=headers, content_type=content_type
    )
    return response.status_code, response.get_json()
