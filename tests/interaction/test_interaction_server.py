"""HttpServer lifecycle and the app's envelopes on a real socket."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from interaction_helpers import TOKEN, our_threads, port_is_free, wait_for

from ding_lite.interaction import HttpServer, ServerError, json_route, make_app

pytestmark = pytest.mark.timeout(30)

MAX_BODY = 1024
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def build_app(release: threading.Event) -> Any:
    app = make_app("test", TOKEN, MAX_BODY)

    @json_route(app, "/echo", {"text": str})
    def echo(body: dict[str, Any]) -> dict[str, Any]:
        return {"text": body["text"]}

    @json_route(app, "/boom", {})
    def boom(body: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("kaboom")

    @json_route(app, "/not_json", {})
    def not_json(body: dict[str, Any]) -> dict[str, Any]:
        return {"value": {1, 2}}

    @json_route(app, "/slow", {})
    def slow(body: dict[str, Any]) -> dict[str, Any]:
        release.wait(5)
        return {"done": True}

    return app


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def server(release: threading.Event) -> Iterator[HttpServer]:
    srv = HttpServer(build_app(release), name="test").start()
    yield srv
    release.set()
    srv.stop()


def post(server: HttpServer, path: str, **kwargs: Any) -> requests.Response:
    kwargs.setdefault("headers", HEADERS)
    return requests.post(f"http://{server.address}{path}", timeout=5, **kwargs)


def test_start_serves_on_a_free_port_and_stop_frees_it(release: threading.Event) -> None:
    server = HttpServer(build_app(release), name="test")
    with pytest.raises(ServerError, match="never started"):
        _ = server.port
    with server:
        assert server.running and server.port > 0
        assert server.address == f"127.0.0.1:{server.port}"
        assert not port_is_free(server.port)
        assert any(name.startswith("ding_lite-http-test") for name in our_threads())
        response = post(server, "/echo", json={"text": "hi"})
        assert response.json() == {
            "success": True,
            "code": 0,
            "message": "ok",
            "data": {"text": "hi"},
        }
    assert not server.running
    assert port_is_free(server.port)
    assert our_threads() == []
    server.stop()  # a second stop is harmless


def test_binding_a_taken_port_is_a_clear_error(
    server: HttpServer, release: threading.Event
) -> None:
    with pytest.raises(ServerError, match=f"{server.port}.*pick another port"):
        HttpServer(build_app(release), port=server.port, name="twin").start()


def test_handler_error_is_a_500_envelope_without_traceback(
    server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="ding_lite"):
        response = post(server, "/boom", json={})
    assert response.status_code == 500
    assert response.json() == {
        "success": False,
        "code": 5000,
        "message": "RuntimeError: kaboom",
        "data": None,
    }
    assert "Traceback" not in response.text
    assert any(record.exc_info for record in caplog.records)  # the traceback goes to the log
    assert post(server, "/echo", json={"text": "still up"}).status_code == 200


def test_handler_data_that_is_not_json_is_a_500_envelope(server: HttpServer) -> None:
    response = post(server, "/not_json", json={})
    assert response.status_code == 500 and "not JSON" in response.json()["message"]


def test_chunked_body_over_the_limit_gets_the_413_envelope(server: HttpServer) -> None:
    def chunks(total: int) -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(total // 256):
            yield b"x" * 256
        yield b'"}'

    # A generator body is sent chunked, without Content-Length: Flask's own limit catches it.
    response = post(server, "/echo", data=chunks(4 * MAX_BODY))
    assert response.status_code == 413
    assert response.json()["code"] == 4130 and response.json()["success"] is False
    response = post(server, "/echo", data=chunks(MAX_BODY // 2))
    assert response.status_code == 200 and len(response.json()["data"]["text"]) == 512


def test_content_length_over_the_limit_gets_413(server: HttpServer) -> None:
    response = post(server, "/echo", json={"text": "x" * (2 * MAX_BODY)})
    assert response.status_code == 413 and response.json()["code"] == 4130


def test_request_logs_stay_off_stderr(server: HttpServer, capfd: pytest.CaptureFixture) -> None:
    post(server, "/echo", json={"text": "quiet"})
    assert "POST /echo" not in capfd.readouterr().err


def test_stop_lets_an_in_flight_request_finish(
    server: HttpServer, release: threading.Event
) -> None:
    answers: list[int] = []
    caller = threading.Thread(
        target=lambda: answers.append(post(server, "/slow", json={}).status_code)
    )
    caller.start()
    assert wait_for(lambda: any(n.endswith("-request") for n in our_threads()))
    threading.Timer(0.2, release.set).start()
    started = time.monotonic()
    server.stop(timeout=5)
    caller.join(5)
    assert answers == [200]
    assert time.monotonic() - started < 4
    assert port_is_free(server.port)
