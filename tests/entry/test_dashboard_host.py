"""The dashboard stays private (issue 40, finding 9): it answers only requests whose Host
names this machine, which defeats DNS rebinding, and says so when bound beyond loopback."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys

import pytest
from helpers import free_port, wait_for

from ding_lite.entry.live.dashboard import HostCheck, is_loopback, make_dashboard_app

ROUTES = ("/", "/static/dashboard.js", "/api/runs", "/api/runs/0/status", "/api/runs/0/scalars")


@pytest.fixture
def run_dir(tmp_path, selfplay_run):
    run = tmp_path / "run"
    run.mkdir()
    (run / "status.json").write_text((selfplay_run / "status.json").read_text())
    return run


def answers(app, host: str) -> set[int]:
    client = app.test_client()
    return {client.get(route, headers={"Host": host}).status_code for route in ROUTES}


def test_a_loopback_dashboard_answers_names_of_loopback_only(run_dir):
    app = make_dashboard_app([run_dir])
    for host in ("localhost", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST.:8080", "127.0.0.2"):
        assert answers(app, host) == {200}, host
    # A rebinding page's name, another machine's address, and what is no Host at all.
    for host in ("evil.example:8080", "127.0.0.1.nip.io", "10.0.0.5:8080", "", "a:b:c", "[::1"):
        assert answers(app, host) == {403}, host
    refused = app.test_client().get("/api/runs", headers={"Host": "evil.example"})
    assert refused.get_json() == {"error": "this dashboard answers requests for this machine only"}
    assert refused.headers["Cache-Control"] == "no-store"


def test_beyond_loopback_it_answers_addresses_and_its_own_names():
    wide = HostCheck("0.0.0.0", allowed=["Dash.Lab"])
    assert not wide.local
    for host in ("10.0.0.5:8080", "[fe80::1]:80", socket.gethostname(), "dash.lab:8080"):
        assert wide.allows(host), host
    assert not wide.allows("evil.example:8080") and not wide.allows(None)
    assert HostCheck("127.0.0.1").local and HostCheck("localhost").local
    assert is_loopback("::1") and not is_loopback("0.0.0.0") and not is_loopback("::")


def request(port: int, path: str, host: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def serve(run_dir, host: str, *extra: str) -> tuple[subprocess.Popen, int, str]:
    """``ding-lite dashboard`` started on ``host``: (process, port, its first stdout line)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "dashboard", str(run_dir)]
        + ["--host", host, "--port", str(port), "--open-for", "60", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, port, proc.stdout.readline()


def stop(proc: subprocess.Popen) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err


def test_a_dashboard_bound_to_every_interface_warns_and_refuses_rebinding(run_dir):
    proc, port, line = serve(run_dir, "0.0.0.0")
    try:
        assert line == f"dashboard of 1 run(s) at http://0.0.0.0:{port}/ (Ctrl-C stops it)\n"
        status, body = request(port, "/api/runs/0/status", f"127.0.0.1:{port}")
        assert status == 200 and json.loads(body)["state"] == "finished"
        assert request(port, "/", f"{socket.gethostname()}:{port}")[0] == 200
        status, body = request(port, "/api/runs/0/status", f"rebind.example:{port}")
        assert status == 403 and b"envstep" not in body
    finally:
        code, err = stop(proc)
    assert code == 0, err
    (warning,) = err.splitlines()
    assert warning == (
        "ding-lite: warning: the dashboard listens on 0.0.0.0, beyond loopback: anyone who "
        f"reaches port {port} reads these runs' status and curves, with no token; prefer "
        f"--host 127.0.0.1 and ssh -L {port}:127.0.0.1:{port}"
    )


def test_a_loopback_dashboard_says_nothing_more_and_refuses_rebinding(run_dir):
    proc, port, line = serve(run_dir, "127.0.0.1", "--allow-host", "dash.lab")
    try:
        assert line.startswith(f"dashboard of 1 run(s) at http://127.0.0.1:{port}/")
        assert request(port, "/api/runs", f"localhost:{port}")[0] == 200
        assert request(port, "/api/runs", f"dash.lab:{port}")[0] == 200  # --allow-host
        assert request(port, "/api/runs", f"rebind.example:{port}")[0] == 403
    finally:
        code, err = stop(proc)
    assert code == 0 and err == ""
    assert wait_for(lambda: proc.poll() is not None, 5)
