"""Fault matrix, hostile inputs: a duplicate worker id, a bad rollout file, a worker that
cannot start, a forged learner registration and a flood of half-open connections.

Where a test plays a token holder it starts the run with ``system.token=<known>``.
"""

from __future__ import annotations

import json
import resource
import selectors
import socket
import threading
import urllib.error
import urllib.request

import pytest
from chaos_harness import FAST, LIMITED_RUN, RUN_ITERS, assert_ledger_balanced, stderr_lines
from helpers import wait_for

EXP = ["-c", "cartpole_ppo_parallel"]
TOKEN = "chaos-known-token-5f0c9a7e"


def _started(chaos, worker_id: str) -> bool:
    return f"collector {worker_id} started" in chaos.log("coordinator")


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_second_collector_with_an_id_in_use_is_refused(chaos):
    """A second ``collector --worker-id collector0`` (right token) exits non-zero with one
    line saying the id is in use; the live collector0 keeps its place and the run finishes
    (the issue: the id was silently taken and the run stalled for ever)."""
    proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST, f"system.token={TOKEN}")
    address = chaos.address()
    assert wait_for(lambda: _started(chaos, "collector0"), 60), chaos.report()
    dup = chaos.command(
        "duplicate",
        ["collector", "--coordinator", address, "--worker-id", "collector0"],
        env={"DING_LITE_TOKEN": TOKEN},
        split=True,
    )
    code = chaos.finish(dup, 60, "duplicate")
    err = stderr_lines(chaos.errors("duplicate"))
    assert code != 0, chaos.errors("duplicate")
    assert len(err) == 1, err
    assert "collector0" in err[0] and "in use" in err[0], err
    assert chaos.finish(proc, 100) == 0, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    assert "stopping" not in chaos.log("collector0"), chaos.log("collector0")  # not evicted
    assert_ledger_balanced(result)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_rollout_file_with_the_wrong_observation_shape_is_rejected(chaos):
    """A well-formed rollout file, validly named, whose observations are 7 wide instead of
    CartPole's 4: moved to rejected/, counted as dropped_invalid, the run finishes (the
    issue: the learner's training thread died and the coordinator looped for ever)."""
    import torch

    from ding_lite.data.files import write_rollout

    proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST)
    chaos.address()
    assert wait_for(lambda: chaos.newest_policy() >= 1, 60), chaos.report()
    version = chaos.newest_policy()
    n = 1024
    bad = {
        "obs": torch.zeros(n, 7),
        "action": torch.zeros(n, dtype=torch.long),
        **{key: torch.zeros(n) for key in ("logp", "value", "reward", "next_value")},
        **{key: torch.zeros(n, dtype=torch.bool) for key in ("terminated", "done")},
    }
    meta = write_rollout(chaos.dir / "data", "collector0", 99_999_999, bad, policy_version=version)
    assert chaos.finish(proc, 100) == 0, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    assert result["ledger"]["dropped_invalid"] >= 1, result["ledger"]
    assert_ledger_balanced(result)
    rejected = list((chaos.dir / "rejected").glob("*99999999*"))
    assert len(rejected) == 1, list((chaos.dir / "rejected").glob("*"))
    assert not (chaos.dir / "data" / "collector0" / meta["path"].rsplit("/", 1)[1]).exists()


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_collector_that_cannot_use_its_device_is_dropped(chaos):
    """A collector joining with ``--device cuda`` on a machine without a GPU: its start task
    fails for a config reason, it is dropped with that reason in coordinator.log, and the
    run goes on and finishes (the issue: everything idled until killed)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --device cuda would start fine")
    proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST, f"system.token={TOKEN}")
    # It joins as the launcher's workers do, so its start task comes while the run trains.
    cuda = chaos.command(
        "cuda",
        ["collector", "--coordinator", chaos.address(), "--worker-id", "cuda0"]
        + ["--device", "cuda", "--master-timeout", "5"],
        env={"DING_LITE_TOKEN": TOKEN},
    )
    assert chaos.finish(proc, 100) == 0, chaos.report()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    dropped = [
        line
        for line in chaos.log("coordinator").splitlines()
        if "cuda0" in line and "dropped" in line
    ]
    assert len(dropped) == 1 and "cuda" in dropped[0].split("cuda0", 1)[1], dropped
    assert_ledger_balanced(result)
    # Nothing is left idling: a dropped worker stops by itself at the latest when the
    # coordinator stops answering (--master-timeout 5).
    chaos.finish(cuda, 15, "cuda")


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_forged_learner_registered_before_the_real_one(chaos):
    """A token holder registers a learner at an address nobody serves, before learner0 (which
    needs seconds to import torch): the coordinator cannot call it back and refuses it with
    400 naming the address, and starts the real one (the issue: "learner failed to start"
    and the run ended at once; since issue 38 a registration is called back first)."""
    dead = socket.socket()  # bound, never listening: connections to it are refused
    dead.bind(("127.0.0.1", 0))
    try:
        proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST, f"system.token={TOKEN}")
        address = chaos.address(timeout=60)
        body = {
            "worker_id": "learner-forged",
            "role": "learner",
            "address": f"127.0.0.1:{dead.getsockname()[1]}",
        }
        request = urllib.request.Request(
            f"http://{address}/master/register",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=20)
        assert refused.value.code == 400
        message = json.loads(refused.value.read())["message"]
        assert f"cannot reach this worker at {body['address']}" in message, message
        assert "learner learner0 registered" not in chaos.log("coordinator")  # it was first
        assert chaos.finish(proc, 100) == 0, chaos.report()
    finally:
        dead.close()
    result = chaos.result()
    assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
    assert "refused registration of 'learner-forged': cannot reach" in chaos.log("coordinator")
    assert_ledger_balanced(result)


class HalfOpen:
    """``n`` connections that each send half a request line and hold it; one the server
    closes (its idle timeout) is opened again, so the pressure lasts the whole run."""

    PARTIAL = b"POST /master/heartbeat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le"

    def __init__(self, address: str, n: int) -> None:
        host, port = address.rsplit(":", 1)
        self.target = (host, int(port))
        self.selector = selectors.DefaultSelector()  # epoll: descriptors past 1,024 are fine
        self.opened = 0
        self._stop = threading.Event()
        for _ in range(n):
            self._open()
        self._thread = threading.Thread(target=self._refresh, daemon=True)
        self._thread.start()

    def _open(self) -> None:
        s = socket.create_connection(self.target, timeout=10)
        s.sendall(self.PARTIAL)
        s.setblocking(False)
        self.selector.register(s, selectors.EVENT_READ)
        self.opened += 1

    def _refresh(self) -> None:
        while not self._stop.is_set():
            for key, _ in self.selector.select(timeout=0.5):
                self.selector.unregister(key.fileobj)
                key.fileobj.close()
                if not self._stop.is_set():
                    try:
                        self._open()
                    except OSError:
                        pass  # the server is gone (the run ended)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        self.selector.close()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_1100_half_open_connections_do_not_disturb_a_run(chaos):
    """1,100 connections that never finish their request, held from the moment the
    coordinator prints its address: the run finishes with zero failed tasks (the issue: the
    live run died within 20 s, "learner lost")."""
    # The run starts with the usual soft limit of 1,024 open files (its servers must raise
    # their own); this process, which holds the connections, gets the hard limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    flood = None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
        proc = chaos.launch(*EXP, *LIMITED_RUN, *FAST)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        flood = HalfOpen(chaos.address(), 1100)
        assert chaos.finish(proc, 120) == 0, chaos.report()
        result = chaos.result()
        assert result["stop_reason"] == "max_train_iter" and result["train_iter"] == RUN_ITERS
        assert result["failed_tasks"] == 0, result
        assert_ledger_balanced(result)
    finally:
        if flood is not None:
            flood.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
