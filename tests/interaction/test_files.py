"""Files over the service's connections, the client's side: get_file keeps only bytes that
match what the answer declared, put_file sends the right digest, and FilePeer's refusals say
whether a retry can help."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Response, request
from helpers import TOKEN, free_port

from ding_lite.interaction import HttpClient, HttpServer, RemoteError, RemoteUnreachable, make_app
from ding_lite.interaction.files import (
    DIGEST_HEADER,
    FilePeer,
    FilePlane,
    file_digest,
    file_response,
    get_file,
    put_file,
)
from ding_lite.utils.errors import TryLater

pytestmark = pytest.mark.timeout(30)

CONTENT = os.urandom(5000)  # what the server serves; more than one TCP segment
TIMEOUT = (2.0, 5.0)


class FileServer:
    """A bare app with file routes only (no learner): uploads kept in ``received/``,
    ``served/`` fetched, and routes that refuse or lie on purpose."""

    def __init__(self, root: Path) -> None:
        self.received, self.served = root / "received", root / "served"
        self.served.mkdir(parents=True)
        (self.served / "blob.bin").write_bytes(CONTENT)
        self.digests_seen: list[str] = []
        app = make_app("files", TOKEN)
        self.server = HttpServer(app, name="files")
        self.files = FilePlane(app, self.server, TOKEN)
        self.files.serve_put("/up/<name>", self._keep, 1 << 20)
        self.files.serve_put("/busy/<name>", self._busy, 1 << 20)
        self.files.serve_put("/refuse/<name>", self._refuse, 1 << 20)
        self.files.serve_get("/files/<name>", self._locate)
        blob = self.served / "blob.bin"
        for rule, view in {
            "/wrong_digest": lambda: file_response(blob, "sha256=" + "0" * 64),
            "/no_digest": lambda: Response(CONTENT, mimetype="application/octet-stream"),
            "/cut_short": self._cut_short,
        }.items():
            app.add_url_rule(rule, endpoint=rule, view_func=view, methods=["GET"])

    def _keep(self, receive: Any, name: str) -> dict[str, Any]:
        self.digests_seen.append(request.headers[DIGEST_HEADER])
        dest = self.received / name
        with receive(dest) as temp:
            os.replace(temp, dest)
        return {"kept": name}

    def _busy(self, receive: Any, name: str) -> None:
        raise TryLater("the receiver is full; send it again later")

    def _refuse(self, receive: Any, name: str) -> None:
        raise ValueError(f"{name} is not wanted here")

    def _locate(self, name: str) -> Path:
        path = self.served / name
        if not path.is_file():
            raise FileNotFoundError(f"no file {name} here")
        return path

    def _cut_short(self) -> Response:
        """Declares all of CONTENT with its true digest, then sends only half of it."""
        headers = {
            "Content-Length": str(len(CONTENT)),
            DIGEST_HEADER: f"sha256={hashlib.sha256(CONTENT).hexdigest()}",
        }
        half = CONTENT[: len(CONTENT) // 2]
        return Response(iter([half]), mimetype="application/octet-stream", headers=headers)

    def peer(self) -> FilePeer:
        return self.files.peer(self.server.address, TIMEOUT)

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture
def file_server(tmp_path: Path, stack: list[Any]) -> FileServer:
    served = FileServer(tmp_path / "server")
    served.server.start()
    stack.append(served)
    return served


@pytest.fixture
def client(file_server: FileServer) -> Iterator[HttpClient]:
    with HttpClient(file_server.server.address, TOKEN, retries=0) as client:
        yield client


def assert_nothing_fetched(dest: Path) -> None:
    """Nothing at ``dest`` and nothing beside it (no temp file left either)."""
    assert not dest.exists()
    assert not dest.parent.exists() or list(dest.parent.iterdir()) == []


def test_get_file_fetches_the_bytes_with_their_digest(client: HttpClient, tmp_path: Path) -> None:
    dest = tmp_path / "in" / "blob.bin"
    get_file(client, "/files/blob.bin", dest, limit=len(CONTENT), timeout=TIMEOUT)
    assert dest.read_bytes() == CONTENT
    assert list(dest.parent.iterdir()) == [dest]


@pytest.mark.parametrize(
    ("route", "why"),
    [
        ("/wrong_digest", "the bytes do not match their digest"),
        ("/no_digest", "the bytes do not match their digest"),
        ("/cut_short", "broke off"),
    ],
)
def test_get_file_keeps_nothing_of_bytes_that_do_not_match_the_answer(
    client: HttpClient, tmp_path: Path, route: str, why: str
) -> None:
    dest = tmp_path / "in" / "blob.bin"
    with pytest.raises(RemoteError) as refused:
        get_file(client, route, dest, limit=1 << 20, timeout=TIMEOUT)
    assert why in str(refused.value)
    assert_nothing_fetched(dest)


def test_get_file_leaves_an_older_file_at_dest_as_it_was(
    client: HttpClient, tmp_path: Path
) -> None:
    dest = tmp_path / "in" / "blob.bin"
    dest.parent.mkdir()
    dest.write_bytes(b"the version fetched before")
    with pytest.raises(RemoteError, match="do not match their digest"):
        get_file(client, "/wrong_digest", dest, limit=1 << 20, timeout=TIMEOUT)
    assert dest.read_bytes() == b"the version fetched before"
    assert list(dest.parent.iterdir()) == [dest]


def test_get_file_refuses_a_file_declared_over_its_limit(
    client: HttpClient, tmp_path: Path
) -> None:
    dest = tmp_path / "in" / "blob.bin"
    with pytest.raises(RemoteError) as refused:
        get_file(client, "/files/blob.bin", dest, limit=len(CONTENT) - 1, timeout=TIMEOUT)
    assert f"a file of {len(CONTENT)} bytes (the limit is {len(CONTENT) - 1})" in str(refused.value)
    assert not refused.value.retryable
    assert_nothing_fetched(dest)


def test_get_file_of_a_missing_file_is_a_404(client: HttpClient, tmp_path: Path) -> None:
    dest = tmp_path / "in" / "nothing.bin"
    with pytest.raises(RemoteError) as missing:
        get_file(client, "/files/nothing.bin", dest, limit=1 << 20, timeout=TIMEOUT)
    assert missing.value.status == 404 and not missing.value.retryable
    assert "no file nothing.bin here" in str(missing.value)
    assert_nothing_fetched(dest)


def test_put_file_sends_the_file_with_its_sha256(
    file_server: FileServer, client: HttpClient, tmp_path: Path
) -> None:
    source = tmp_path / "out.bin"
    source.write_bytes(CONTENT)
    answer = put_file(client, "/up/out.bin", source, TIMEOUT)
    assert answer == {"kept": "out.bin"}
    expected = f"sha256={hashlib.sha256(CONTENT).hexdigest()}"
    assert file_digest(source) == expected
    assert file_server.digests_seen == [expected]
    assert (file_server.received / "out.bin").read_bytes() == CONTENT
    assert [p.name for p in file_server.received.iterdir()] == ["out.bin"]


def test_file_peer_puts_and_gets(file_server: FileServer, tmp_path: Path) -> None:
    source = tmp_path / "out.bin"
    source.write_bytes(CONTENT)
    peer = file_server.peer()
    try:
        assert peer.put("/up/copy.bin", source) == {"kept": "copy.bin"}
        peer.get("/files/blob.bin", tmp_path / "in" / "blob.bin", limit=1 << 20)
    finally:
        peer.close()
    assert (file_server.received / "copy.bin").read_bytes() == CONTENT
    assert (tmp_path / "in" / "blob.bin").read_bytes() == CONTENT


@pytest.mark.parametrize(
    ("route", "status", "retryable", "why"),
    [
        ("/busy/x.bin", 429, True, "the receiver is full"),
        ("/refuse/x.bin", 400, False, "x.bin is not wanted here"),
    ],
)
def test_file_peer_put_says_whether_a_refusal_may_pass_later(
    file_server: FileServer,
    tmp_path: Path,
    route: str,
    status: int,
    retryable: bool,
    why: str,
) -> None:
    source = tmp_path / "x.bin"
    source.write_bytes(CONTENT)
    peer = file_server.peer()
    try:
        with pytest.raises(RemoteError) as refused:
            peer.put(route, source)
    finally:
        peer.close()
    assert refused.value.status == status
    assert refused.value.retryable is retryable
    assert why in str(refused.value)


def test_file_peer_put_to_an_unreachable_address_may_pass_later(
    file_server: FileServer, tmp_path: Path
) -> None:
    source = tmp_path / "x.bin"
    source.write_bytes(CONTENT)
    peer = file_server.files.peer(f"127.0.0.1:{free_port()}", TIMEOUT)
    try:
        with pytest.raises(RemoteUnreachable) as unreachable:
            peer.put("/up/x.bin", source)
    finally:
        peer.close()
    assert unreachable.value.status is None and unreachable.value.retryable
