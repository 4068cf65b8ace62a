"""HttpServer lifecycle and the app's envelopes on a real socket."""

from __future__ import annotations

import logging
import resource
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from helpers import TOKEN, port_is_free
from interaction_helpers import our_threads

from ding_lite.interaction import HttpServer, ServerError, json_route, make_app
from ding_lite.interaction.server import OPEN_FILES_TARGET

pytestmark = pytest.mark.timeout(30)

MAX_BODY = 1024
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def build_app(release: threading.Event, entered: threading.Event | None = None) -> Any:
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
        if entered is not None:
            entered.set()
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


def test_stop_lets_an_in_flight_request_finish(release: threading.Event) -> None:
    entered = threading.Event()
    server = HttpServer(build_app(release, entered), name="test").start()
    answers: list[int] = []
    caller = threading.Thread(
        target=lambda: answers.append(post(server, "/slow", json={}).status_code)
    )
    caller.start()
    assert entered.wait(5)
    threading.Timer(0.2, release.set).start()
    started = time.monotonic()
    server.stop(timeout=5)
    caller.join(5)
    assert answers == [200]
    assert time.monotonic() - started < 4
    assert port_is_free(server.port)


def open_half_requests(address: str, count: int) -> list[socket.socket]:
    """``count`` connections that each sent the start of a request and then nothing."""
    host, port = address.rsplit(":", 1)
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection((host, int(port)), timeout=5)
            socks.append(sock)
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nAuthoriz")
    except BaseException:
        close_all(socks)
        raise
    return socks


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


@pytest.mark.slow
def test_half_open_connections_do_not_block_a_normal_request(release: threading.Event) -> None:
    # Start from the usual soft limit of 1,024 open files: 1,100 connections need twice that
    # in this process (both ends), so the server must raise it, and watch them with poll().
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
    socks: list[socket.socket] = []
    server = HttpServer(build_app(release), name="test")
    try:
        server.start()
        socks = open_half_requests(server.address, 1100)
        # A timeout here (requests raises) means the flood starved the server.
        response = requests.post(
            f"http://{server.address}/echo", json={"text": "hi"}, headers=HEADERS, timeout=2
        )
        assert response.status_code == 200 and response.json()["data"] == {"text": "hi"}
        assert post(server, "/echo", headers={}, json={"text": "x"}).status_code == 401
        server.stop(timeout=5)
        assert not server.running and port_is_free(server.port)
    finally:
        close_all(socks)
        server.stop()
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (max(soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]), hard)
        )


@pytest.mark.slow
def test_half_sent_requests_are_closed_after_the_channel_timeout(
    release: threading.Event,
) -> None:
    with HttpServer(build_app(release), name="test", channel_timeout=1) as server:
        socks = open_half_requests(server.address, 20)
        try:
            for sock in socks:
                sock.settimeout(5)
            started = time.monotonic()
            for sock in socks:
                try:
                    assert sock.recv(1024) == b""  # the server hung up without an answer
                except ConnectionResetError:
                    pass
            assert time.monotonic() - started < 5
        finally:
            close_all(socks)


def test_start_raises_the_open_file_limit(release: threading.Event) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_TARGET if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES_TARGET)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
    try:
        with HttpServer(build_app(release), name="test"):
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == wanted
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))


def test_stop_frees_the_port_while_clients_hold_connections(release: threading.Event) -> None:
    server = HttpServer(build_app(release), name="test").start()
    socks = open_half_requests(server.address, 5)
    try:
        keep_alive = requests.Session()
        assert keep_alive.post(
            f"http://{server.address}/echo", json={"text": "k"}, headers=HEADERS, timeout=5
        ).ok
        started = time.monotonic()
        server.stop(timeout=3)
        assert time.monotonic() - started < 3
        assert not server.running and port_is_free(server.port)
        assert our_threads() == []
        keep_alive.close()
    finally:
        close_all(socks)


def test_idle_servers_do_not_spin(release: threading.Event) -> None:
    """waitress reads its poll timeout as whole seconds: 0.5 became 0 and every idle server
    polled in a busy loop (16 of them used a core). Idle servers must cost next to no CPU."""
    servers = [HttpServer(build_app(release), name=f"idle{i}").start() for i in range(4)]
    try:
        requests.get(f"http://{servers[0].address}/", timeout=5)  # a served request first
        before = resource.getrusage(resource.RUSAGE_SELF)
        time.sleep(1.0)
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        for server in servers:
            server.stop()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 0.25, f"4 idle servers used {cpu:.2f} s of CPU in 1 s"
