"""The learner's Inbox on a real server: every bad upload is refused with a telling answer,
leaves nothing behind, and the run goes on (the next valid rollout is stored)."""

from __future__ import annotations

import collections
import hashlib
import http.client
import io
import json
import logging
import pickle
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import torch
from helpers import TOKEN, tiny, wait_for

from ding_lite.config import compile_config
from ding_lite.data.files import ROLLOUT_FORMAT, policy_file, write_policy, write_rollout
from ding_lite.data.spec import RolloutSpec
from ding_lite.envs.buffered import build_collector_env
from ding_lite.interaction import HttpClient, HttpServer, RemoteError, make_app
from ding_lite.interaction.files import DIGEST_HEADER, FilePeer, FilePlane, file_digest
from ding_lite.interaction.server import THREAD_PREFIX
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.learner.comm import inbox as inbox_module
from ding_lite.worker.learner.comm.inbox import Inbox
from ding_lite.worker.learner.comm.intake import run_rollout_spec
from ding_lite.worker.learner.comm.ranks import build_policy

pytestmark = pytest.mark.timeout(60)

SERVER_NAME = "inbox-test"
# Overrides of every run here: 4 env copies x 16 steps, so a rollout holds 64 samples.
RUN = tiny("system.data_plane=http", "system.max_pending_files=2")
SAMPLES = 64


class Rollouts(NamedTuple):
    """What a real collector of the run writes, and what the learner checks it against."""

    spec: RolloutSpec
    data: dict[str, torch.Tensor]  # one rollout, SAMPLES samples
    more: dict[str, torch.Tensor]  # the next rollout of the same collector
    model_state: dict[str, torch.Tensor]  # the policy's weights, for a published version


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory: pytest.TempPathFactory) -> Rollouts:
    """Two rollouts collected by a real SerialCollector of the run, and the run's spec as
    the learner's start task builds it."""
    cfg = compile_config("cartpole_ppo_parallel", RUN, exp_dir=str(tmp_path_factory.mktemp("spec")))
    probe, policy, _ = build_policy(cfg)
    spec = run_rollout_spec(cfg, probe, policy)
    env = build_collector_env(cfg, cfg.env.num_envs, "cpu", 0)
    collector = SerialCollector.from_config(env, policy, cfg, seed=0)
    data, more = collector.collect(), collector.collect()
    assert next(iter(data.values())).shape[0] == SAMPLES
    return Rollouts(spec, data, more, policy.model.state_dict())


class Answer(NamedTuple):
    """A server's answer to one request."""

    status: int
    body: bytes

    @property
    def message(self) -> str:
        """The message of its JSON envelope."""
        return json.loads(self.body)["message"]


@dataclass
class Learner:
    """The learner's side of the data plane: a real server with the Inbox's routes."""

    tmp: Path
    server: HttpServer
    files: FilePlane
    inbox: Inbox
    spec: RolloutSpec
    path_data: Path
    path_policy: Path
    outgoing: Path  # where the test's collector writes its rollouts before sending them

    def open(self, *overrides: str) -> None:
        """Opens the inbox for a run of :data:`RUN` with ``overrides``."""
        cfg = compile_config(
            "cartpole_ppo_parallel", tiny(*RUN, *overrides), exp_dir=str(self.tmp / "run")
        )
        self.inbox.open(cfg, self.path_data, self.path_policy, self.spec)

    def peer(self, token: str = TOKEN) -> FilePeer:
        """A collector's connection to this learner (``token``: the one it sends)."""
        if token == TOKEN:
            return self.files.peer(self.server.address, timeout=5.0)
        return FilePeer(HttpClient(self.server.address, token, retries=0), timeout=5.0)

    def put(self, route: str, body: bytes, headers: dict[str, str]) -> Answer:
        """One PUT of ``body`` to ``route`` exactly as given (no path normalization)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            conn.request("PUT", route, body=body, headers=headers)
            response = conn.getresponse()
            return Answer(response.status, response.read())
        finally:
            conn.close()

    def stored(self) -> list[Path]:
        """Every file (temp files and links included) under ``path_data``."""
        return sorted(p for p in self.path_data.rglob("*") if p.is_file() or p.is_symlink())

    def send_valid(self, data: dict[str, torch.Tensor], seq: int, collector: str = "c0") -> Path:
        """Writes a rollout as a collector does and sends it; asserts the learner keeps it
        under the same name; returns where it is kept."""
        path = Path(write_rollout(self.outgoing, collector, seq, data, policy_version=0)["path"])
        peer = self.peer()
        try:
            answer = peer.put(route(collector, path.name), path)
        finally:
            peer.close()
        assert answer == {"stored": True, "received_before": False}
        kept = self.path_data / collector / path.name
        assert kept.read_bytes() == path.read_bytes()
        return kept


def route(collector: str, name: str) -> str:
    return f"/data/rollout/{collector}/{name}"


def headers_for(body: bytes, token: str | None = TOKEN) -> dict[str, str]:
    """The headers a collector sends with ``body``: its token and the body's digest."""
    headers = {DIGEST_HEADER: f"sha256={hashlib.sha256(body).hexdigest()}"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def server_threads() -> list[str]:
    prefix = f"{THREAD_PREFIX}http-{SERVER_NAME}"
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix)]


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*") if p.name.endswith(".tmp")]


@pytest.fixture
def learner(tmp_path: Path, rollouts: Rollouts) -> Iterator[Learner]:
    """A learner's server with an open Inbox; at teardown the server is stopped and neither
    a thread of it nor a temp file is left."""
    app = make_app("learner", TOKEN)
    server = HttpServer(app, "127.0.0.1", 0, name=SERVER_NAME).start()
    try:
        files = FilePlane(app, server, TOKEN)
        inbox = Inbox(files, logging.getLogger("test.inbox"))
        path_data = tmp_path / "run" / "data"
        path_data.mkdir(parents=True)
        learner = Learner(
            tmp=tmp_path,
            server=server,
            files=files,
            inbox=inbox,
            spec=rollouts.spec,
            path_data=path_data,
            path_policy=tmp_path / "run" / "policy",
            outgoing=tmp_path / "collector",
        )
        learner.open()
        yield learner
    finally:
        server.stop()
    assert wait_for(lambda: not server_threads(), timeout=2.0), server_threads()
    assert temp_files(tmp_path) == []


def valid_file(learner: Learner, data: dict[str, torch.Tensor], seq: int = 0) -> Path:
    """A valid rollout written by collector c0 outside ``path_data``."""
    return Path(write_rollout(learner.outgoing, "c0", seq, data, policy_version=0)["path"])


def rollout_bytes(data: Any, **content: Any) -> bytes:
    """A torch file shaped like a rollout, holding ``data`` as it is (no checks)."""
    buffer = io.BytesIO()
    fields = {"format": ROLLOUT_FORMAT, "collector": "c0", "seq": 0, "policy_version": 0}
    torch.save({**fields, "episode_returns": [], "data": data, **content}, buffer)
    return buffer.getvalue()


# --- 1. the token --------------------------------------------------------------------------


def test_a_wrong_or_missing_token_is_refused(learner: Learner, rollouts: Rollouts) -> None:
    path = valid_file(learner, rollouts.data)
    body = path.read_bytes()
    for token in ("wrong-token-0123456789", None):
        answer = learner.put(route("c0", path.name), body, headers_for(body, token))
        assert answer.status == 401
        assert "bearer token" in answer.message
    wrong = learner.peer(token="wrong-token-0123456789")
    try:
        with pytest.raises(RemoteError) as refused:
            wrong.put(route("c0", path.name), path)
    finally:
        wrong.close()
    assert refused.value.status == 401 and not refused.value.retryable
    assert learner.stored() == []
    learner.send_valid(rollouts.data, seq=0)


# --- 2. the digest -------------------------------------------------------------------------


def test_a_body_that_does_not_match_its_digest_is_refused(
    learner: Learner, rollouts: Rollouts
) -> None:
    body = valid_file(learner, rollouts.data).read_bytes()
    other = valid_file(learner, rollouts.more, seq=1).read_bytes()
    answer = learner.put(route("c0", "00000000_v0_n64.pt"), body, headers_for(other))
    assert answer.status == 400
    assert "digest mismatch" in answer.message
    assert learner.stored() == []
    learner.send_valid(rollouts.data, seq=0)


@pytest.mark.parametrize(
    "digest",
    [
        None,
        "",
        "sha256=" + "0" * 63,
        "sha256=" + "g" * 64,
        "md5=" + "0" * 64,
        "0" * 64,
    ],
)
def test_a_missing_or_malformed_digest_header_is_refused(
    learner: Learner, rollouts: Rollouts, digest: str | None
) -> None:
    body = valid_file(learner, rollouts.data).read_bytes()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if digest is not None:
        headers[DIGEST_HEADER] = digest
    answer = learner.put(route("c0", "00000000_v0_n64.pt"), body, headers)
    assert answer.status == 400
    assert f"{DIGEST_HEADER} must be sha256=<64 hex digits>" in answer.message
    assert learner.stored() == []
    learner.send_valid(rollouts.data, seq=0)


# --- 3. the size limit ---------------------------------------------------------------------


def test_a_rollout_over_max_rollout_bytes_is_refused(learner: Learner, rollouts: Rollouts) -> None:
    small = valid_file(learner, rollouts.data)
    two = {key: torch.cat([rollouts.data[key], rollouts.more[key]]) for key in rollouts.data}
    big = Path(write_rollout(learner.outgoing, "c0", 1, two, policy_version=0)["path"])
    limit = (small.stat().st_size + big.stat().st_size) // 2  # the small one fits, not the big
    learner.open(f"system.max_rollout_bytes={limit}")
    peer = learner.peer()
    try:
        with pytest.raises(RemoteError) as refused:
            peer.put(route("c0", big.name), big)
    finally:
        peer.close()
    assert refused.value.status == 413 and not refused.value.retryable
    assert f"body of {big.stat().st_size} bytes exceeds the limit of {limit}" in str(refused.value)
    assert learner.stored() == []
    learner.send_valid(rollouts.data, seq=0)


def declared_only(learner: Learner, length: int, wait_s: float) -> bytes:
    """Sends a PUT's headers declaring ``length`` body bytes, and none of them; returns what
    the server answers within ``wait_s`` seconds (b"" when it answered nothing)."""
    head = (
        f"PUT {route('c0', '00000000_v0_n64.pt')} HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"{DIGEST_HEADER}: sha256={'0' * 64}\r\nContent-Length: {length}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", learner.server.port), timeout=wait_s) as sock:
        sock.sendall(head.encode())
        try:
            return sock.recv(4096)
        except TimeoutError:
            return b""


def test_a_huge_declared_length_is_refused_before_the_body_is_read(
    learner: Learner, rollouts: Rollouts
) -> None:
    learner.open("system.max_rollout_bytes=2048")
    # No body byte is ever sent: an answer can only come from the declared length.
    answer = declared_only(learner, 1 << 40, wait_s=5.0)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert learner.stored() == []
    learner.open()
    learner.send_valid(rollouts.data, seq=0)


# --- 4. a body cut short -------------------------------------------------------------------


def test_a_truncated_body_stores_nothing_and_the_server_answers_on(
    learner: Learner, rollouts: Rollouts
) -> None:
    path = valid_file(learner, rollouts.data)
    body = path.read_bytes()
    head = f"PUT {route('c0', path.name)} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers_for(body).items()
    )
    with socket.create_connection(("127.0.0.1", learner.server.port), timeout=5) as sock:
        sock.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode())
        sock.sendall(body[: len(body) // 2])
        sock.shutdown(socket.SHUT_WR)
        # The server has dealt with the cut once it closes its side (or answers).
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert not answer.startswith(b"HTTP/1.1 2"), answer[:200]
    assert learner.stored() == []
    learner.send_valid(rollouts.data, seq=0)


# --- 5. a replay ---------------------------------------------------------------------------


def test_a_rollout_sent_again_is_acknowledged_and_stored_once(
    learner: Learner, rollouts: Rollouts
) -> None:
    path = valid_file(learner, rollouts.data)
    peer = learner.peer()
    try:
        first = peer.put(route("c0", path.name), path)
        again = peer.put(route("c0", path.name), path)
        assert first == {"stored": True, "received_before": False}
        assert again == {"stored": False, "received_before": True}
        assert learner.stored() == [learner.path_data / "c0" / path.name]
        # Trained on and deleted: a late retry is still not stored a second time.
        (learner.path_data / "c0" / path.name).unlink()
        assert peer.put(route("c0", path.name), path) == again
    finally:
        peer.close()
    assert learner.stored() == []


# --- 6. names that could reach elsewhere ---------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        route("..", "00000000_v0_n64.pt"),
        route("%2e%2e", "00000000_v0_n64.pt"),
        route("a%2Fb", "00000000_v0_n64.pt"),
        route("c0", "../x.pt"),
        route("c0", "../../00000000_v0_n64.pt"),
        route("c0", "..%2F00000000_v0_n64.pt"),
        route("c0", "..%2F..%2F..%2F00000000_v0_n64.pt"),
        route("c0", "x.pt"),
        route("c0", "00000000_v0_n64.pt.exe"),
        route("c0", ".00000000_v0_n64.pt.abc.tmp"),
        route("c0", "sub%2F00000000_v0_n64.pt"),
        route("c0", "sub/00000000_v0_n64.pt"),
        route("c0", ""),
        "/data/rollout/c0",
        route("c0", "%2Ftmp%2F00000000_v0_n64.pt"),
        route("c0", "%2F00000000_v0_n64.pt"),
    ],
)
def test_a_path_like_collector_or_name_writes_nothing_anywhere(
    learner: Learner, rollouts: Rollouts, target: str
) -> None:
    body = valid_file(learner, rollouts.data).read_bytes()
    before = sorted(learner.tmp.rglob("*"))
    answer = learner.put(target, body, headers_for(body))
    assert sorted(learner.tmp.rglob("*")) == before  # no file or folder appeared anywhere
    assert list(learner.path_data.iterdir()) == []
    telling = {400: ("not a rollout file name", "cannot name a folder"), 404: ("no route PUT",)}
    assert answer.status in telling, answer
    assert any(words in answer.message for words in telling[answer.status]), answer.message
    learner.send_valid(rollouts.data, seq=0)


def test_a_collector_folder_that_is_a_link_out_of_path_data_is_refused(
    learner: Learner, rollouts: Rollouts
) -> None:
    elsewhere = learner.tmp / "elsewhere"
    elsewhere.mkdir()
    (learner.path_data / "c1").symlink_to(elsewhere, target_is_directory=True)
    body = valid_file(learner, rollouts.data).read_bytes()
    answer = learner.put(route("c1", "00000000_v0_n64.pt"), body, headers_for(body))
    assert answer.status == 400 and "is not inside" in answer.message
    assert list(elsewhere.iterdir()) == []
    learner.send_valid(rollouts.data, seq=0)


# --- 7. content that is not a rollout of this run ------------------------------------------


class Touch:
    """Unpickled, creates ``path``: a pickle that would run code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def torch_saved(obj: Any) -> bytes:
    """``obj`` as torch.save writes it (its pickle inside torch's zip format)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def test_a_pickle_that_would_run_code_is_refused_unrun(
    learner: Learner, rollouts: Rollouts, tmp_path: Path
) -> None:
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(Touch(probe))).close()
    assert probe.exists()  # the payload is live: a plain unpickling runs it
    marker = tmp_path / "marker"
    payloads = {
        "a plain pickle": pickle.dumps(Touch(marker)),
        "a torch file": torch_saved(Touch(marker)),
        "a torch file holding it as data": rollout_bytes({"obs": Touch(marker)}),
        "a pickled class": pickle.dumps(collections.OrderedDict),
    }
    for what, body in payloads.items():
        answer = learner.put(route("c0", "00000000_v0_n64.pt"), body, headers_for(body))
        assert answer.status == 400, what
        assert "not a valid rollout" in answer.message, what
        assert not marker.exists(), what
        assert learner.stored() == [], what
    learner.send_valid(rollouts.data, seq=0)


def _with(data: dict[str, torch.Tensor], key: str, value: Any) -> dict[str, Any]:
    """``data`` with ``key`` holding ``value`` instead."""
    return {**data, key: value}


def test_content_that_is_not_a_rollout_of_the_run_is_refused(
    learner: Learner, rollouts: Rollouts
) -> None:
    data = rollouts.data
    nan_reward = data["reward"].clone()
    nan_reward[3] = float("nan")
    inf_obs = data["obs"].clone()
    inf_obs[0, 0] = float("inf")
    bad = {
        "its data a list": (rollout_bytes([1.0, 2.0]), "its data is a list"),
        "its data a str": (rollout_bytes("obs"), "its data is a str"),
        "lists for tensors": (
            rollout_bytes({key: value.tolist() for key, value in data.items()}),
            "is not a dense tensor",
        ),
        "a str for a tensor": (rollout_bytes(_with(data, "obs", "x")), "is not a dense tensor"),
        "a wrong shape": (
            rollout_bytes(_with(data, "obs", torch.zeros(SAMPLES, 5))),
            "'obs' has shape (64, 5), expected (samples, 4)",
        ),
        "a wrong dtype": (
            rollout_bytes(_with(data, "action", data["action"].float())),
            "'action' has dtype torch.float32, expected torch.int64",
        ),
        "a NaN": (rollout_bytes(_with(data, "reward", nan_reward)), "non-finite"),
        "an infinity": (rollout_bytes(_with(data, "obs", inf_obs)), "non-finite"),
        "a missing key": (
            rollout_bytes({k: v for k, v in data.items() if k != "done"}),
            "missing key 'done'",
        ),
        "another version than its name": (
            rollout_bytes(data, policy_version=1),
            "holds policy version 1, its name says 0",
        ),
        "another format": (rollout_bytes(data, format="other"), "not a ding_lite rollout"),
        "no torch file": (b"not a torch file at all", "not a torch tensor file"),
    }
    for what, (body, why) in bad.items():
        answer = learner.put(route("c0", "00000000_v0_n64.pt"), body, headers_for(body))
        assert answer.status == 400, what
        assert "not a valid rollout" in answer.message and why in answer.message, (
            what,
            answer.message,
        )
        assert learner.stored() == [], what
    learner.send_valid(rollouts.data, seq=0)


def test_a_rollout_whose_size_is_not_its_name_is_refused(
    learner: Learner, rollouts: Rollouts
) -> None:
    body = valid_file(learner, rollouts.data).read_bytes()
    answer = learner.put(route("c0", "00000000_v0_n128.pt"), body, headers_for(body))
    assert answer.status == 400 and "holds 64 samples, its name says 128" in answer.message
    assert learner.stored() == []
    learner.send_valid(rollouts.data, seq=0)


# --- 8. backpressure -----------------------------------------------------------------------


def test_a_collector_with_max_pending_files_waiting_is_told_to_wait(
    learner: Learner, rollouts: Rollouts
) -> None:
    learner.open("system.max_pending_files=1")
    first = learner.send_valid(rollouts.data, seq=0)
    second = valid_file(learner, rollouts.more, seq=1)
    peer = learner.peer()
    try:
        with pytest.raises(RemoteError) as wait:
            peer.put(route("c0", second.name), second)
        assert wait.value.status == 429 and wait.value.retryable
        assert "system.max_pending_files=1" in str(wait.value)
        assert learner.stored() == [first]
        learner.send_valid(rollouts.more, seq=0, collector="c1")  # another collector's own
        first.unlink()  # trained on
        assert peer.put(route("c0", second.name), second)["stored"] is True
    finally:
        peer.close()
    kept = [learner.path_data / "c0" / second.name, learner.path_data / "c1" / first.name]
    assert learner.stored() == kept


def test_rollouts_wait_while_no_run_is_open(learner: Learner, rollouts: Rollouts) -> None:
    path = valid_file(learner, rollouts.data)
    peer = learner.peer()
    try:
        learner.inbox.close()
        with pytest.raises(RemoteError) as wait:
            peer.put(route("c0", path.name), path)
        assert wait.value.status == 429 and wait.value.retryable
        assert "no run yet" in str(wait.value)
        assert learner.stored() == []
    finally:
        peer.close()
    learner.open()
    learner.send_valid(rollouts.data, seq=0)


def test_rollouts_being_received_count_against_max_pending_files(
    learner: Learner, rollouts: Rollouts, monkeypatch: pytest.MonkeyPatch
) -> None:
    learner.open("system.max_pending_files=1")
    entered, release = threading.Event(), threading.Event()
    check = inbox_module.read_checked

    def held_check(*args: Any, **kwargs: Any) -> Any:
        """The first rollout's check waits until the test releases it."""
        if not entered.is_set():
            entered.set()
            release.wait(10)
        return check(*args, **kwargs)

    monkeypatch.setattr(inbox_module, "read_checked", held_check)
    first = valid_file(learner, rollouts.data, seq=0)
    second = valid_file(learner, rollouts.more, seq=1)
    answers: list[dict[str, Any]] = []

    def send_first() -> None:
        peer = learner.peer()
        try:
            answers.append(peer.put(route("c0", first.name), first))
        finally:
            peer.close()

    sender = threading.Thread(target=send_first)
    sender.start()
    peer = learner.peer()
    try:
        assert entered.wait(5)  # the first rollout is being received
        with pytest.raises(RemoteError) as wait:
            peer.put(route("c0", second.name), second)
    finally:
        release.set()
        sender.join(10)
        peer.close()
    assert wait.value.status == 429
    assert answers == [{"stored": True, "received_before": False}]
    assert learner.stored() == [learner.path_data / "c0" / first.name]


# --- 9. policy versions --------------------------------------------------------------------


def test_a_published_policy_streams_back_with_its_digest(
    learner: Learner, rollouts: Rollouts, tmp_path: Path
) -> None:
    path = write_policy(learner.path_policy, 3, rollouts.model_state)
    assert path == policy_file(learner.path_policy, 3)
    conn = http.client.HTTPConnection("127.0.0.1", learner.server.port, timeout=10)
    try:
        conn.request("GET", "/data/policy/3", headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    assert response.status == 200
    assert body == path.read_bytes()
    assert response.getheader(DIGEST_HEADER) == file_digest(path)
    assert response.getheader(DIGEST_HEADER) == f"sha256={hashlib.sha256(body).hexdigest()}"
    peer = learner.peer()
    try:
        peer.get("/data/policy/3", tmp_path / "fetched" / "v3.pt", limit=1 << 24)
    finally:
        peer.close()
    assert (tmp_path / "fetched" / "v3.pt").read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("/data/policy/4", "policy version 4 is not published"),
        ("/data/policy/x", "no route GET /data/policy/x"),
        ("/data/policy/-1", "no route GET /data/policy/-1"),
        ("/data/policy/3.0", "no route GET /data/policy/3.0"),
        ("/data/policy/..%2Fpolicy_v00000003.pt", "no route GET"),
    ],
)
def test_an_unknown_policy_version_is_404(
    learner: Learner, rollouts: Rollouts, tmp_path: Path, target: str, why: str
) -> None:
    write_policy(learner.path_policy, 3, rollouts.model_state)
    peer = learner.peer()
    dest = tmp_path / "fetched" / "policy.pt"
    try:
        with pytest.raises(RemoteError) as missing:
            peer.get(target, dest, limit=1 << 24)
    finally:
        peer.close()
    assert missing.value.status == 404 and not missing.value.retryable
    assert why in str(missing.value)
    assert not dest.parent.exists() or list(dest.parent.iterdir()) == []
