"""No open door through Ray (issue 25, acceptance line 5): the local Ray instance of
``ding-lite parallel --launcher ray`` keeps every service on loopback and serves only
clients that present the run's Ray token, a token that reaches no file, argv or log.

While a run trains, the test lists every TCP socket listening in a process of the run (the
launcher, Ray's GCS, raylet and agents, the worker actors), asks the run's GCS with
``ray.init`` once without a token and once with the run's token, then stops the run with
Ctrl-C; ``ray_baseline`` checks that no Ray process of it is left.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from chaos_harness import FAST, NEVER_SOLVED, send
from helpers import wait_for
from test_chaos_ray import EXP, ray_baseline, ray_processes  # noqa: F401 (fixture by name)

pytest.importorskip("ray")

# A client on this machine: what ray.init needs to reach a node that lives on 127.0.0.1
# (without it Ray swaps 127.0.0.1 for the machine's routable address, where nothing listens),
# and a refused client gives up after 2 tries, 1 s apart, instead of 20.
CLIENT_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_NUM_REDIS_GET_RETRIES": "2"}
CLIENT = "import ray, sys; ray.init(address=sys.argv[1]); print('CPU', ray.cluster_resources())"
CLIENT_TIMEOUT_S = 60


def proc_file(pid: int, name: str) -> list[bytes]:
    """``/proc/<pid>/<name>`` split at NULs (cmdline, environ); ``[b""]`` once it is gone."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes().split(b"\0")
    except OSError:
        return [b""]


def run_pids(ray_tmp: str) -> list[int]:
    """Live processes started with ``RAY_TMPDIR=ray_tmp``: the run's and its Ray's."""
    wanted = f"RAY_TMPDIR={ray_tmp}".encode()
    pids = (int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit())
    return [pid for pid in pids if pid != os.getpid() and wanted in proc_file(pid, "environ")]


def listening(pids: list[int]) -> dict[tuple[str, int], str]:
    """``(IP, port) -> command`` of every TCP socket listening in one of ``pids``, from
    /proc/net/tcp and tcp6 (what ``ss -ltnp`` shows)."""
    owner: dict[str, int] = {}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # gone meanwhile
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                owner[target[8:-1]] = pid
    found = {}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in owner:  # 0A: LISTEN
                continue
            ip_hex, port_hex = local.split(":")
            words = [int(ip_hex[i : i + 8], 16) for i in range(0, len(ip_hex), 8)]
            ip = ipaddress.ip_address(b"".join(struct.pack("<I", w) for w in words))
            cmd = proc_file(owner[inode], "cmdline")[0]
            found[(str(ip), int(port_hex, 16))] = cmd.decode(errors="replace")
    return found


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 on a dual-stack socket
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def ray_client(gcs: str, home: Path, token: str | None) -> subprocess.CompletedProcess:
    """``ray.init(address=gcs)`` in a fresh Python, with the run's Ray token or none at all
    (no token variable, and a home without ``~/.ray/auth_token``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}
    env.update(CLIENT_ENV, HOME=str(home))
    if token is not None:
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    return subprocess.run(
        [sys.executable, "-c", CLIENT, gcs],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_local_ray_is_on_loopback_and_serves_only_the_runs_token(chaos, ray_baseline):  # noqa: F811
    ray_tmp = os.environ["RAY_TMPDIR"]
    home = chaos.base / "home"  # the run's home: Ray must not put a token file there
    home.mkdir()
    chaos.allowed.add("home")
    proc = chaos.launch(
        *EXP,
        "--seed",
        "0",
        "--max-train-iter",
        "100000",
        *FAST,
        *NEVER_SOLVED,
        env={"HOME": str(home)},
    )
    chaos.address()
    assert wait_for(lambda: chaos.newest_policy() >= 1, 60), chaos.report()

    sockets = listening(run_pids(ray_tmp))
    names = sorted(set(sockets.values()))
    assert any(n.endswith("gcs_server") for n in names), sockets
    assert any(n.endswith("raylet") for n in names), sockets
    assert any(n.startswith("ray::WorkerActor") for n in names), sockets
    assert all(is_loopback(ip) for ip, _ in sockets), f"listening beyond loopback: {sockets}"
    gcs_port = next(port for (_, port), name in sockets.items() if name.endswith("gcs_server"))
    gcs_pid = next(
        p for p in run_pids(ray_tmp) if proc_file(p, "cmdline")[0].endswith(b"gcs_server")
    )
    environ = proc_file(gcs_pid, "environ")
    token = next(v[15:].decode() for v in environ if v.startswith(b"RAY_AUTH_TOKEN="))
    assert b"RAY_AUTH_MODE=token" in environ and len(token) == 64
    assert not [
        p for p in run_pids(ray_tmp) if token.encode() in b" ".join(proc_file(p, "cmdline"))
    ]

    gcs = f"127.0.0.1:{gcs_port}"
    refused = ray_client(gcs, home, token=None)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "AuthenticationError" in refused.stderr, refused.stderr[-2000:]
    served = ray_client(gcs, home, token=token)
    assert served.returncode == 0 and "CPU" in served.stdout, served.stderr[-2000:]

    # Ctrl-C (acceptance 4 of the Ray issue): exit 130, one line naming the signal; the
    # teardown's ray_baseline checks that no Ray process or port of the run is left.
    assert len(ray_processes(ray_tmp)) >= 4  # the instance and 3 actors
    assert send(proc.pid, signal.SIGINT)
    assert chaos.finish(proc, 60) == 130, chaos.report()
    assert "SIGINT" in chaos.output(), chaos.output()
    assert chaos.result()["stop_reason"] is not None
    assert not (home / ".ray").exists(), list(home.rglob("*"))
    written = [p for p in chaos.base.rglob("*") if p.is_file()]
    assert not [p for p in written if token.encode() in p.read_bytes()]
