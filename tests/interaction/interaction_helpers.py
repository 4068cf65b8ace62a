"""Helpers shared by the interaction tests (imported by name; tests/ has no packages)."""

from __future__ import annotations

import json
import threading
from typing import Any

from flask import Flask
from helpers import TOKEN

from ding_lite.interaction import HttpServer, json_route, make_app
from ding_lite.interaction.server import THREAD_PREFIX


def our_threads() -> list[str]:
    """Names of the live threads this package started."""
    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


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
