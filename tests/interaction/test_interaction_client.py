"""HttpClient: bounded retries, honored timeouts, and envelope unwrapping."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Response
from helpers import TOKEN, free_port
from urllib3.util.retry import Retry

from ding_lite.interaction import (
    Code,
    HttpClient,
    HttpServer,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
    base_url,
    json_route,
    make_app,
)
from ding_lite.utils.errors import ConfigError

pytestmark = pytest.mark.timeout(30)


class Peer:
    """A server with routes that misbehave on purpose, counting hits per path."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.release = threading.Event()
        app = make_app("peer", TOKEN, 1 << 16)
        json_route(app, "/ok", {"x": int})(lambda body: self._hit("/ok") or {"x2": body["x"] * 2})
        json_route(app, "/null", {})(lambda body: self._hit("/null"))
        json_route(app, "/slow", {})(self._slow)
        for path, status, text in [
            ("/unavailable", 503, "<html>busy</html>"),
            ("/html", 200, "<html>hello</html>"),
            ("/not_envelope", 200, '{"hello": 1}'),
        ]:
            app.add_url_rule(path, path, self._raw(path, status, text), methods=["POST"])
        self.server = HttpServer(app, name="peer")

    def _hit(self, path: str) -> None:
        self.hits[path] = self.hits.get(path, 0) + 1

    def _slow(self, body: dict[str, Any]) -> dict[str, Any]:
        self._hit("/slow")
        self.release.wait(5)
        return {}

    def _raw(self, path: str, status: int, text: str) -> Any:
        def view() -> Response:
            self._hit(path)
            return Response(text, status=status)

        return view


@pytest.fixture
def peer() -> Iterator[Peer]:
    p = Peer()
    p.server.start()
    yield p
    p.release.set()
    p.server.stop()


@pytest.fixture
def client(peer: Peer) -> Iterator[HttpClient]:
    with HttpClient(peer.server.address, TOKEN, timeout=(1.0, 2.0), retries=2, backoff=0.01) as c:
        yield c


def test_success_returns_data(client: HttpClient) -> None:
    assert client.post("/ok", {"x": 21}) == {"x2": 42}
    assert client.post("/null", {}) == {}


def test_error_envelope_raises_remote_error(client: HttpClient, peer: Peer) -> None:
    with pytest.raises(RemoteError) as info:
        client.post("/ok", {"x": "21"})
    assert (info.value.status, info.value.code) == (400, Code.BAD_REQUEST)
    assert "field 'x' must be int" in info.value.message
    assert "HTTP 400" in str(info.value) and "/ok" in str(info.value)
    with HttpClient(peer.server.address, "wrong-token") as stranger:
        with pytest.raises(RemoteError) as info:
            stranger.post("/ok", {"x": 1})
    assert (info.value.status, info.value.code) == (401, Code.UNAUTHORIZED)
    assert peer.hits.get("/ok") is None  # neither request reached the handler


@pytest.mark.parametrize("path", ["/html", "/not_envelope"])
def test_answers_that_are_not_envelopes_raise(client: HttpClient, path: str) -> None:
    with pytest.raises(RemoteError) as info:
        client.post(path, {})
    assert (info.value.status, info.value.code) == (200, Code.BAD_RESPONSE)


def test_503_is_retried_a_bounded_number_of_times(client: HttpClient, peer: Peer) -> None:
    with pytest.raises(RemoteError) as info:
        client.post("/unavailable", {})
    assert (info.value.status, info.value.code) == (503, Code.BAD_RESPONSE)
    assert peer.hits["/unavailable"] == 3  # one try + 2 retries


def test_refused_connection_is_retried_then_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = []
    increment = Retry.increment

    def counting_increment(self: Retry, *args: Any, **kwargs: Any) -> Retry:
        attempts.append(kwargs.get("error"))
        return increment(self, *args, **kwargs)

    monkeypatch.setattr(Retry, "increment", counting_increment)
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with HttpClient(address, TOKEN, retries=3, backoff=0.05) as c:
        with pytest.raises(RemoteUnreachable) as info:
            c.post("/master/heartbeat", {"worker_id": "c0"})
    assert time.monotonic() - started < 3.0
    assert len(attempts) == 4  # each failed try counts once; the 4th exhausts the 3 retries
    assert info.value.status is None and info.value.code == Code.UNREACHABLE
    assert address in str(info.value) and "tried 4 times" in str(info.value)
    assert isinstance(info.value, RemoteError)


def test_read_timeout_is_honored_and_not_retried(peer: Peer) -> None:
    with HttpClient(peer.server.address, TOKEN, timeout=(1.0, 5.0), retries=3) as c:
        started = time.monotonic()
        with pytest.raises(RemoteTimeout) as info:
            c.post("/slow", {}, timeout=(1.0, 0.3))
        elapsed = time.monotonic() - started
    assert 0.25 < elapsed < 2.0
    assert isinstance(info.value, TimeoutError) and info.value.code == Code.TIMEOUT
    assert "within" in str(info.value)
    peer.release.set()
    assert peer.hits["/slow"] == 1  # the request went out: retrying could act on it twice


def test_body_that_is_not_json_is_refused_before_sending(client: HttpClient, peer: Peer) -> None:
    with pytest.raises(ValueError, match="not JSON-serializable"):
        client.post("/ok", {"x": float("nan")})
    with pytest.raises(ValueError, match="not JSON-serializable"):
        client.post("/ok", {"x": object()})
    assert peer.hits == {}


@pytest.mark.parametrize(
    ("address", "url"),
    [
        ("127.0.0.1:8700", "http://127.0.0.1:8700"),
        (" localhost:1 ", "http://localhost:1"),
        ("http://10.0.0.2:80/", "http://10.0.0.2:80"),
        ("https://example.org:443", "https://example.org:443"),
        ("[::1]:9000", "http://[::1]:9000"),
    ],
)
def test_base_url_normalizes(address: str, url: str) -> None:
    assert base_url(address) == url


@pytest.mark.parametrize(
    "address", ["", "localhost", ":80", "host:abc", "host:70000", "host:0", "ftp://h:1", "h:1/x"]
)
def test_base_url_rejects(address: str) -> None:
    with pytest.raises(ConfigError, match="address"):
        base_url(address)
