"""``ding-lite parallel --launcher ray --ray-address`` on a Ray cluster of three nodes, each
in its own test host, the run dir on the common path (docs/parallel.rst, "The Ray
launcher").

The head node (10.0.0.1) has no CPUs for actors, so Ray places the learner and the
collectors on the other two nodes (10.0.0.2, 10.0.0.3); the run is driven from the head
with ``system.host=0.0.0.0``. Each actor must serve on its node's address: with the
workers' default (127.0.0.1) the coordinator could not call them back, every collector
was lost and replaced, and the run ended ``no_collectors`` with 0 env steps.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest
from helpers import wait_for
from roles import balanced

RAY_START_TIMEOUT_S = 120


def _ray(net, host: str, argv: list[str], env: dict) -> None:
    done = subprocess.run(
        net.command(host, ["ray", *argv]),
        env=env,
        capture_output=True,
        text=True,
        timeout=RAY_START_TIMEOUT_S,
    )
    assert done.returncode == 0, (host, argv, done.stdout[-2000:], done.stderr[-2000:])


def _cluster_run(
    net, run_dir, extra: list[str], during=None, resources: dict | None = None
) -> tuple[int, str]:
    """Starts Ray on the three hosts (head on a, without CPUs for actors; ``resources``:
    host -> its custom resources), drives ``ding-lite parallel --launcher ray`` from a,
    calls ``during(driver)`` while it runs, stops Ray on every host (the driver has
    ended by then); the driver's exit code and output."""
    token = secrets.token_hex(32)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    started = []
    # Ray's sockets live under its temp dir, and a Unix socket's path has at most 107 bytes.
    ray_tmp = tempfile.mkdtemp(prefix="dlray", dir="/tmp")
    try:
        for host, cpus in (("a", "0"), ("b", "2"), ("c", "2")):
            head = ["--head", "--port", "6379", "--include-dashboard", "false"]
            join = head if host == "a" else ["--address", "10.0.0.1:6379"]
            _ray(
                net,
                host,
                ["start", *join, "--node-ip-address", net.address(host), "--num-cpus", cpus]
                + ["--temp-dir", f"{ray_tmp}/{host}", "--disable-usage-stats"]
                + ["--object-store-memory", str(100 * 2**20)]
                + (
                    ["--resources", json.dumps(resources[host])]
                    if host in (resources or {})
                    else []
                ),
                env,
            )
            started.append(host)
        driver = net.start(
            "a",
            [sys.executable, "-m", "ding_lite", "parallel", "-c", "cartpole_ppo_parallel"]
            + ["--launcher", "ray", "--ray-address", "10.0.0.1:6379", "--exp-dir", str(run_dir)]
            + ["system.host=0.0.0.0", *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if during is not None:
            during(driver)
        out, _ = driver.communicate(timeout=240)

        # The run's actors end with it; Ray's own services stay until the cluster stops.
        def actors() -> list[int]:
            return [p for h in started for p in net.pids(h) if "WorkerActor" in _cmdline(p)]

        assert wait_for(lambda: not actors(), 30), f"actors of the run left: {actors()}"
    finally:
        try:
            _stop_ray(net, started)
        finally:
            shutil.rmtree(ray_tmp, ignore_errors=True)
    return driver.returncode, out


def _stop_ray(net, hosts: list[str]) -> None:
    """Stops the Ray processes of the test hosts: SIGTERM, then SIGKILL what is left after
    10 s. Not ``ray stop``, which ends every Ray process of the machine by name, those of
    another test's local instance included."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for host in hosts:
            for pid in net.pids(host):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
        if wait_for(lambda: not any(net.pids(h) for h in hosts), 10):
            return


def _placed_on_other_nodes(state: dict) -> None:
    """Every worker served on its own node's address, never the head's, never loopback."""
    nodes = {address.rsplit(":", 1)[0] for address in state["addresses"].values()}
    assert nodes and nodes <= {"10.0.0.2", "10.0.0.3"}, state["addresses"]


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_a_run_on_a_three_node_ray_cluster_places_workers_on_other_nodes(hosts, tmp_path):
    # The roles pinned by custom resources: the learner to b, the collectors to c.
    net = hosts("a", "b", "c")
    run_dir = tmp_path / "run"
    pins = ["system.learner_node=learner_node", "system.collector_node=collector_node"]
    resources = {"b": {"learner_node": 1}, "c": {"collector_node": 1}}
    code, out = _cluster_run(net, run_dir, pins, resources=resources)
    assert code == 0, out[-4000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert balanced(result["ledger"]), result["ledger"]
    state = json.loads((run_dir / "coordinator_state.json").read_text())
    _placed_on_other_nodes(state)
    hosts_of = {wid: address.rsplit(":", 1)[0] for wid, address in state["addresses"].items()}
    assert {h for w, h in hosts_of.items() if w.startswith("learner")} == {"10.0.0.2"}, hosts_of
    assert {h for w, h in hosts_of.items() if w.startswith("collector")} == {"10.0.0.3"}, hosts_of
    assert "Traceback" not in out, out[-4000:]
    assert not [h for h in ("a", "b", "c") if net.pids(h)]


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_http_plane_on_ray_nodes_sharing_nothing_outlives_a_lost_node(hosts, tmp_path):
    # Every node has its own run root; rollouts, policies and checkpoints go over HTTP.
    # Mid-run node b's raylet is killed: its actors die with it, the launcher places
    # their replacements on c, and a learner among them resumes from the checkpoint home.
    net = hosts("a", "b", "c")
    root = tmp_path / "runs"
    for host in ("a", "b", "c"):
        net.own_folder(host, root)
    run_dir = root / "run"

    def lose_node_b(driver) -> None:
        def iteration() -> int:
            try:
                return int(json.loads(net.read("a", run_dir / "status.json") or "")["iteration"])
            except (ValueError, KeyError, TypeError):
                return 0

        assert wait_for(lambda: iteration() >= 3 or driver.poll() is not None, 150)
        raylets = [p for p in net.pids("b") if "raylet" in _cmdline(p)]
        assert raylets, "no raylet found on node b"
        for pid in raylets:
            os.kill(pid, signal.SIGKILL)

    code, out = _cluster_run(net, run_dir, ["system.data_plane=http"], during=lose_node_b)
    assert code == 0, out[-4000:]
    result = json.loads(net.read("a", run_dir / "result.json") or "null")
    assert result["stop_reason"] in ("solved", "max_env_step"), result
    assert balanced(result["ledger"]), (result["ledger"], out[-3000:])
    assert result["restarts"] >= 1, result
    _placed_on_other_nodes(json.loads(net.read("a", run_dir / "coordinator_state.json")))
    assert not [h for h in ("a", "b", "c") if net.pids(h)]


def _cmdline(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        return ""
