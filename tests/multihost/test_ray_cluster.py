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

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile

import pytest
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


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_a_run_on_a_three_node_ray_cluster_places_workers_on_other_nodes(hosts, tmp_path):
    net = hosts("a", "b", "c")
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
                + ["--object-store-memory", str(100 * 2**20)],
                env,
            )
            started.append(host)
        run_dir = tmp_path / "run"
        driver = net.start(
            "a",
            [sys.executable, "-m", "ding_lite", "parallel", "-c", "cartpole_ppo_parallel"]
            + ["--launcher", "ray", "--ray-address", "10.0.0.1:6379", "--exp-dir", str(run_dir)]
            + ["system.host=0.0.0.0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out, _ = driver.communicate(timeout=240)
    finally:
        try:
            for host in reversed(started):
                _ray(net, host, ["stop", "--force"], env)
        finally:
            shutil.rmtree(ray_tmp, ignore_errors=True)
    assert driver.returncode == 0, out[-4000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert balanced(result["ledger"]), result["ledger"]
    # Every worker served on its own node's address, never the head's, never loopback.
    state = json.loads((run_dir / "coordinator_state.json").read_text())
    nodes = {address.rsplit(":", 1)[0] for address in state["addresses"].values()}
    assert nodes and nodes <= {"10.0.0.2", "10.0.0.3"}, state["addresses"]
    assert "Traceback" not in out, out[-4000:]
    assert not [h for h in ("a", "b", "c") if net.pids(h)]
