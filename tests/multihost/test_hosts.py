"""The test hosts themselves: separate addresses that reach each other over the switch,
nothing added to this machine's own network, a link that a test cuts and restores, listening
sockets read per host, and nothing left afterwards."""

from __future__ import annotations

import subprocess
import sys

from hosts import namespaces

PORT = 7050
# Accepts connections and answers each with its host's name, until killed.
SERVER = (
    "import socket, sys\n"
    "s = socket.create_server((sys.argv[1], int(sys.argv[2])))\n"
    "print('listening', flush=True)\n"
    "while True:\n"
    "    c, _ = s.accept(); c.sendall(sys.argv[3].encode()); c.close()\n"
)
CLIENT = (
    "import socket, sys\n"
    "try:\n"
    "    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)\n"
    "    print(c.recv(64).decode())\n"
    "except OSError as err:\n"
    "    print('unreachable', type(err).__name__)\n"
)


def _ask(hosts, client: str, server: str) -> str:
    return hosts.run(
        client, [sys.executable, "-c", CLIENT, hosts.address(server), str(PORT)]
    ).stdout.strip()


def _own_network() -> list[str]:
    return [
        subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10).stdout
        for args in (["-br", "link"], ["-br", "addr"], ["route"])
    ]


def test_hosts_reach_each_other_and_links_cut_and_come_back(hosts):
    before = _own_network()
    net = hosts("a", "b")
    assert (net.address("a"), net.address("b")) == ("10.0.0.1", "10.0.0.2")
    server = net.start(
        "a", [sys.executable, "-c", SERVER, "0.0.0.0", str(PORT), "host-a"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout.readline().strip() == "listening"
    assert _ask(net, "b", "a") == "host-a"
    # Nothing was added to this machine's own namespace (no link, address or route): the
    # test subnet exists only behind the switch. (Connecting to 10.0.0.1 from here would go
    # out to the real network, an address no test may use.)
    assert _own_network() == before
    assert ("0.0.0.0", PORT) in net.listening("a")
    assert ("0.0.0.0", PORT) not in net.listening("b")
    net.cut("a")
    assert _ask(net, "b", "a").startswith("unreachable")
    net.restore("a")
    assert _ask(net, "b", "a") == "host-a"
    assert server.pid in net.pids("a")


def test_closing_removes_every_namespace_and_process(hosts):
    net = hosts("x", "y", "z")
    made = {h.netns for h in net.hosts.values()} | {net.switch}
    assert made <= namespaces()
    sleeper = net.start("y", ["sleep", "600"])
    assert net.close() == []
    assert not made & namespaces()
    assert sleeper.poll() is not None
