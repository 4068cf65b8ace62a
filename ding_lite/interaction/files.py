"""Files over the service's own connections: streamed, size-limited, digest-checked.

The ``http`` data plane (``system.data_plane``) moves rollouts and policies with these,
between hosts that share no folder. Bytes only: what a file must hold is the receiver's
check (a learner reads a rollout with ``weights_only`` and validates it against the run's
spec before it keeps it). Both sides stream: a body goes from the socket to a temp file
beside its destination, chunk by chunk, never whole in memory.

- The sender computes the file's SHA-256 and sends it as ``X-Ding-Lite-Digest``; the
  receiver hashes what it reads and refuses a mismatch (400), keeping nothing.
- A body must say its length (411 without one) and stay within the route's limit (413 on
  the declared length: the server refuses one over its own limit, the largest of its
  routes', before reading it; one under that is read by the server, then refused); one that
  ends short never reaches the handler (the server drops it).
- A route's own limit (:func:`~ding_lite.interaction.app.limit_route`) replaces the app's
  JSON body limit for it.

Workers know nothing of HTTP: a :class:`~ding_lite.interaction.Slave`'s :class:`FilePlane`
serves their handlers and gives them a :class:`FilePeer` to call another worker. A handler
says what went wrong with plain exceptions: ``ValueError`` (400, the file is refused),
``FileNotFoundError`` (404), :class:`~ding_lite.utils.errors.TryLater` (429).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import requests
from flask import Flask, Response, request

from ding_lite.interaction.app import limit_route, success_response
from ding_lite.interaction.client import HttpClient, Timeout, describe_failure
from ding_lite.interaction.envelope import ApiError, Code, RemoteError
from ding_lite.utils.errors import TryLater

DIGEST_HEADER = "X-Ding-Lite-Digest"
_CHUNK = 1 << 20


Receive = Callable[[Path], contextlib.AbstractContextManager[Path]]
"""``receive(dest)``: :func:`received_body` for the request being served."""


def put_route(app: Flask, rule: str, handler: Callable[..., dict[str, Any] | None]) -> None:
    """Serves ``PUT rule`` with ``handler(receive, **route params) -> answer data``.

    The handler decides where the body goes and checks it: ``with receive(dest) as temp:``
    streams it into ``temp`` (length and digest checked), and the handler moves ``temp``
    into place once its content passed. Plain exceptions become answers (see the module).
    """

    def view(**params: Any) -> Response:
        with _answers():
            return success_response(handler(received_body, **params))

    app.add_url_rule(rule, endpoint=f"PUT {rule}", view_func=view, methods=["PUT"])


def get_route(app: Flask, rule: str, locate: Callable[..., Path]) -> None:
    """Serves ``GET rule``: the file ``locate(**route params)`` names, streamed with its
    length and digest (computed once per version of the file)."""
    digests: dict[Path, tuple[int, int, str]] = {}
    lock = threading.Lock()

    def view(**params: Any) -> Response:
        with _answers():
            path = locate(**params)
            stat = path.stat()
        with lock:
            known = digests.get(path)
        if known is None or known[:2] != (stat.st_mtime_ns, stat.st_size):
            known = (stat.st_mtime_ns, stat.st_size, file_digest(path))
            with lock:
                for old in [p for p in digests if not p.exists()]:
                    del digests[old]
                digests[path] = known
        return file_response(path, known[2])

    app.add_url_rule(rule, endpoint=f"GET {rule}", view_func=view, methods=["GET"])


@contextlib.contextmanager
def _answers() -> Iterator[None]:
    """Turns a handler's plain exceptions into the answers the module describes."""
    try:
        yield
    except TryLater as err:
        raise ApiError(Code.BUSY, str(err)) from None
    except FileNotFoundError as err:
        raise ApiError(Code.NOT_FOUND, str(err)) from None
    except ValueError as err:
        raise ApiError(Code.BAD_REQUEST, str(err)) from None


class FilePeer:
    """Sends files to and fetches files from another worker of the run.

    Args:
        client: an :class:`HttpClient` to the peer, with the run's token.
        timeout: seconds one call may go without progress (connect, read).
    """

    def __init__(self, client: HttpClient, timeout: Timeout) -> None:
        self._client = client
        self._timeout = timeout
        self.address = client.base_url

    def put(self, route: str, path: str | os.PathLike) -> dict[str, Any]:
        """:func:`put_file` to the peer."""
        return put_file(self._client, route, path, self._timeout)

    def get(self, route: str, dest: str | os.PathLike, limit: int) -> None:
        """:func:`get_file` from the peer."""
        get_file(self._client, route, dest, limit, self._timeout)

    def close(self) -> None:
        self._client.close()


class FilePlane:
    """A worker's files over its own server: routes it serves, peers it calls.

    Args:
        app: the worker's app (from :func:`~ding_lite.interaction.app.make_app`).
        server: the :class:`~ding_lite.interaction.server.HttpServer` serving it.
        token: the run's token, sent to peers.
        master: the coordinator's ``host:port`` (a worker's plane; None: the master's).
    """

    def __init__(self, app: Flask, server: Any, token: str, master: str | None = None) -> None:
        self._app, self._server, self._token = app, server, token
        self._master = master

    def home(self, timeout: Timeout) -> FilePeer:
        """The coordinator, as a peer: the run's home (its checkpoints)."""
        if self._master is None:
            raise ValueError("the master's own file plane has no home to call")
        return self.peer(self._master, timeout)

    def peer(self, address: str, timeout: Timeout) -> FilePeer:
        """Another worker of the run (``host:port``).

        Raises:
            ConfigError: ``address`` is not ``host:port``.
        """
        return FilePeer(HttpClient(address, self._token, timeout=timeout, retries=1), timeout)

    def serve_put(self, rule: str, handler: Callable[..., Any], limit: int) -> None:
        """Serves uploads to ``rule`` with ``handler`` (:func:`put_route`), bodies up to
        ``limit`` bytes."""
        put_route(self._app, rule, handler)
        self.limit(rule, limit)

    def serve_get(self, rule: str, locate: Callable[..., Path]) -> None:
        """Serves the files ``locate`` names at ``rule`` (:func:`get_route`)."""
        get_route(self._app, rule, locate)

    def limit(self, rule: str, limit: int) -> None:
        """Sets a route's body limit, before or after the server started."""
        limit_route(self._app, rule, limit)
        self._server.refresh_body_limit()


def file_digest(path: str | os.PathLike) -> str:
    """``"sha256=<hex>"`` of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return f"sha256={digest.hexdigest()}"


def _expected_digest(value: str | None) -> str:
    """The digest a sender declared, checked for its form.

    Raises:
        ApiError: (400) none, or not ``sha256=<64 hex digits>``.
    """
    value = (value or "").strip()
    algo, _, hexdigest = value.partition("=")
    if algo != "sha256" or len(hexdigest) != 64 or not _is_hex(hexdigest):
        raise ApiError(Code.BAD_REQUEST, f"header {DIGEST_HEADER} must be sha256=<64 hex digits>")
    return f"sha256={hexdigest.lower()}"


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def received_body(dest: Path) -> Iterator[Path]:
    """Streams the request's body into a temp file beside ``dest``; yields its path.

    The body must declare its length and digest; the temp file is fsynced. The caller
    checks the content, then moves the file into place (``os.replace(temp, dest)``) inside
    the block; whatever is still at the temp path when the block ends is deleted.

    Raises:
        ApiError: (411) no Content-Length; (400) no or a malformed digest, a body shorter
            than declared, or bytes whose digest is not the declared one.
    """
    expected = _expected_digest(request.headers.get(DIGEST_HEADER))
    length = request.content_length
    if length is None:
        raise ApiError(Code.LENGTH_REQUIRED, "a file body must declare its Content-Length")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    temp = Path(name)
    try:
        digest, got = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            stream = request.stream
            while got < length:
                chunk = stream.read(min(_CHUNK, length - got))
                if not chunk:
                    break
                digest.update(chunk)
                out.write(chunk)
                got += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        if got != length:
            raise ApiError(Code.BAD_REQUEST, f"truncated body: {got} of {length} bytes arrived")
        if f"sha256={digest.hexdigest()}" != expected:
            raise ApiError(
                Code.BAD_REQUEST, f"digest mismatch: the {length} bytes received are not the sent"
            )
        yield temp
    finally:
        temp.unlink(missing_ok=True)


def file_response(path: Path, digest: str) -> Response:
    """Streams ``path`` with its length and ``digest`` (see :func:`file_digest`)."""
    size = path.stat().st_size

    def chunks() -> Iterator[bytes]:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                yield chunk

    headers = {"Content-Length": str(size), DIGEST_HEADER: digest}
    return Response(chunks(), mimetype="application/octet-stream", headers=headers)


def put_file(
    client: HttpClient, route: str, path: str | os.PathLike, timeout: Timeout
) -> dict[str, Any]:
    """Sends a file's bytes with PUT (streamed, with its digest); returns the answer's data.

    Raises:
        RemoteTimeout, RemoteUnreachable, RemoteError: as :meth:`HttpClient.post` (a
            refusal is a RemoteError with the receiver's status and message).
    """
    headers = {DIGEST_HEADER: file_digest(path), "Content-Type": "application/octet-stream"}
    with open(path, "rb") as body:
        return client.request("PUT", route, timeout, data=body, headers=headers)


def get_file(
    client: HttpClient, route: str, dest: str | os.PathLike, limit: int, timeout: Timeout
) -> None:
    """Fetches a file with GET into ``dest``, atomically (temp file, fsync, rename).

    The answer must declare its length (at most ``limit`` bytes) and digest, and the bytes
    must match both; otherwise nothing is left at ``dest`` or beside it.

    Raises:
        RemoteTimeout, RemoteUnreachable, RemoteError: as :meth:`HttpClient.post`;
            RemoteError also for an answer that breaks the rules above.
    """
    dest = Path(dest)
    url = client.base_url + route
    with client.stream("GET", route, timeout) as response:
        if response.status_code != 200:
            client.raise_for_envelope(url, response)
        length = response.headers.get("Content-Length", "")
        declared = response.headers.get(DIGEST_HEADER, "")
        if not length.isdigit() or int(length) > limit:
            raise RemoteError(
                response.status_code,
                Code.BAD_RESPONSE,
                f"GET {url}: a file of {length or 'unknown'} bytes (the limit is {limit})",
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                digest, got = _copy(response, out, url)
                out.flush()
                os.fsync(out.fileno())
            if got != int(length) or f"sha256={digest}" != declared:
                raise RemoteError(
                    200, Code.BAD_RESPONSE, f"GET {url}: the bytes do not match their digest"
                )
            os.replace(name, dest)
        finally:
            Path(name).unlink(missing_ok=True)


def _copy(response: requests.Response, out: IO[bytes], url: str) -> tuple[str, int]:
    digest, got = hashlib.sha256(), 0
    try:
        for chunk in response.iter_content(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            got += len(chunk)
    except requests.RequestException as e:
        raise RemoteError(
            200, Code.BAD_RESPONSE, f"GET {url} broke off: {describe_failure(e)}"
        ) from e
    return digest.hexdigest(), got
