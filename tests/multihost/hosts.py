"""Test hosts: network namespaces with addresses of their own, joined by a switch, whose
links a test can cut and restore.

Each :class:`TestHosts` makes, as root:

- one *switch* namespace holding a Linux bridge, so nothing is added to the machine's own
  network namespace (its interfaces, routes and addresses stay as they were);
- one namespace per host, named ``<prefix>-<host>``, with loopback up and ``eth0`` at
  ``10.0.0.<n>/24`` (the addresses the docs' multi-machine section uses), the other end of
  its veth pair plugged into the bridge. Every switch is its own isolated segment, so two
  sets of hosts never see each other, whatever addresses they use.

A host's link is cut at the switch (its ``eth0`` stays up, as when a cable upstream is
pulled: its sockets see no error, packets just stop arriving) and restored the same way.
Commands run in a host with ``ip netns exec``. :meth:`TestHosts.close` kills every process
left in the namespaces, deletes them (their veths go with them) and reports what it could
not remove; the fixture turns that into a failure.

Commands run in a host share this machine's filesystem (one shared filesystem, as a
cluster with NFS would have), except a folder a host was given of its own
(:meth:`TestHosts.own_folder`: a tmpfs mounted there in a mount namespace that only that
host's commands enter, so each host has its own files at the same path, as machines
without a shared filesystem do). :meth:`TestHosts.name_hosts` gives the hosts names that
resolve in every host (``/etc/netns/<namespace>/hosts``, which ``ip netns exec`` puts in
place of ``/etc/hosts``), and a command started ``as_host`` runs with the host's name as
its host name (``unshare --uts``), as on a cluster's nodes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SETS = itertools.count()  # host sets made by this process
SUBNET = "10.0.0"
ETC_NETNS = Path("/etc/netns")  # ip netns exec: /etc/netns/<namespace>/<file> over /etc/<file>
IP_TIMEOUT_S = 10.0  # one `ip` command; it never takes more than a moment


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=check
        )
    except subprocess.CalledProcessError as err:
        raise RuntimeError(f"ip {' '.join(args)}: {err.stderr.strip()}") from None


def namespaces() -> set[str]:
    """The names of every network namespace on this machine."""
    out = _ip("netns", "list", check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def can_make_hosts() -> str:
    """Why test hosts cannot be made here, or "" when they can."""
    if os.geteuid() != 0:
        return "test hosts need root (ip netns add)"
    try:
        probe = f"dlprobe{os.getpid()}"
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except FileNotFoundError:
        return "test hosts need iproute2 (the ip command)"
    except RuntimeError as err:
        return f"network namespaces cannot be made here: {err}"
    return ""


@dataclass
class Host:
    """One test host: its namespace, address and the switch port that links it."""

    name: str
    netns: str
    address: str
    port: str  # the veth end in the switch namespace
    procs: list[subprocess.Popen] = field(default_factory=list)
    keeper: subprocess.Popen | None = None  # holds the mount namespace of its own folder


class TestHosts:
    """``names`` hosts at 10.0.0.1, 10.0.0.2, ... in namespaces ``<prefix>-<name>``."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self, names: Sequence[str], prefix: str | None = None) -> None:
        if not 0 < len(names) < 250 or len(set(names)) != len(names):
            raise ValueError(f"between 1 and 249 distinct host names, got {list(names)}")
        unique = f"{time.monotonic_ns() % 100_000}n{next(_SETS)}"  # sets made side by side
        self.prefix = prefix or f"dl{os.getpid()}x{unique}"
        self.switch = f"{self.prefix}-sw"
        self.hosts: dict[str, Host] = {}
        self._made: list[str] = []
        self._etc: list[Path] = []  # /etc/netns/<namespace> folders made by name_hosts
        try:
            self._add_netns(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for n, name in enumerate(names, start=1):
                self._add_host(name, n)
        except BaseException:
            self.close()
            raise

    def _add_netns(self, netns: str) -> None:
        _ip("netns", "add", netns)
        self._made.append(netns)
        _ip("-n", netns, "link", "set", "lo", "up")

    def _add_host(self, name: str, n: int) -> None:
        netns, port = f"{self.prefix}-{name}", f"p{n}"
        self._add_netns(netns)
        # Both ends are made in the switch namespace, then one moves into the host.
        _ip("-n", self.switch, "link", "add", port, "type", "veth", "peer", "name", "eth0")
        _ip("-n", self.switch, "link", "set", "eth0", "netns", netns)
        _ip("-n", self.switch, "link", "set", port, "master", "br0")
        _ip("-n", self.switch, "link", "set", port, "up")
        address = f"{SUBNET}.{n}"
        _ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", netns, "link", "set", "eth0", "up")
        self.hosts[name] = Host(name, netns, address, port)

    # --- using the hosts -----------------------------------------------------------------
    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def address(self, name: str) -> str:
        return self.hosts[name].address

    def name_hosts(self) -> None:
        """Makes every host's name resolve to its address in every host, as a cluster's
        DNS would (removed at :meth:`close`)."""
        table = "127.0.0.1 localhost\n"
        table += "".join(f"{h.address} {h.name}\n" for h in self.hosts.values())
        for host in self.hosts.values():
            folder = ETC_NETNS / host.netns
            folder.mkdir(parents=True, exist_ok=True)
            self._etc.append(folder)
            (folder / "hosts").write_text(table)

    def own_folder(self, name: str, folder: Path) -> None:
        """Gives host ``name`` a folder of its own at ``folder`` (an empty tmpfs that only
        its commands see; this machine and the other hosts see what is there without it).
        Call it before starting anything in the host; gone at :meth:`close`."""
        host = self.hosts[name]
        if host.keeper is not None:
            raise ValueError(f"host {name} has a folder of its own already")
        folder.mkdir(parents=True, exist_ok=True)
        mount = 'mount -t tmpfs -o size=2g ding-lite-test "$0" && echo ready && exec sleep 86400'
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(folder)]
        keeper = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, *argv], stdout=subprocess.PIPE, text=True
        )
        host.keeper = keeper
        line = keeper.stdout.readline() if keeper.stdout is not None else ""
        if line.strip() != "ready":
            raise RuntimeError(f"could not mount a tmpfs at {folder} for host {name}")

    def command(self, name: str, argv: Sequence[str], as_host: bool = False) -> list[str]:
        """``argv`` as a command line that runs it in host ``name`` (``as_host``: with the
        host's name as its host name; in the mount namespace of its own folder, if any)."""
        host = self.hosts[name]
        named = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name]
        own = ["nsenter", f"--mount=/proc/{host.keeper.pid}/ns/mnt", "--"] if host.keeper else []
        return [*own, "ip", "netns", "exec", host.netns, *(named if as_host else []), *argv]

    def read(self, name: str, path: Path) -> str | None:
        """The text of a file as host ``name`` sees it (None: no such file)."""
        out = self.run(name, ["cat", str(path)])
        return out.stdout if out.returncode == 0 else None

    def files(self, name: str, folder: Path) -> list[str]:
        """The files under ``folder`` as host ``name`` sees it (paths relative to it)."""
        out = self.run(name, ["find", str(folder), "-type", "f"]).stdout
        return sorted(os.path.relpath(line, folder) for line in out.splitlines() if line)

    def start(
        self, name: str, argv: Sequence[str], as_host: bool = False, **popen: Any
    ) -> subprocess.Popen:
        """Starts ``argv`` in host ``name`` (``popen``: Popen's keywords); killed at close
        if still running."""
        proc = subprocess.Popen(self.command(name, argv, as_host), **popen)
        self.hosts[name].procs.append(proc)
        return proc

    def run(
        self, name: str, argv: Sequence[str], timeout: float = 30.0
    ) -> subprocess.CompletedProcess:
        """Runs ``argv`` in host ``name`` to its end; its output as text."""
        return subprocess.run(
            self.command(name, argv), capture_output=True, text=True, timeout=timeout
        )

    def cut(self, name: str) -> None:
        """Unplugs host ``name`` at the switch: nothing reaches it or leaves it."""
        _ip("-n", self.switch, "link", "set", self.hosts[name].port, "down")

    def restore(self, name: str) -> None:
        """Plugs host ``name`` back in."""
        _ip("-n", self.switch, "link", "set", self.hosts[name].port, "up")

    def pids(self, name: str) -> list[int]:
        """The processes running in host ``name``'s network namespace (the keeper of its
        own folder aside)."""
        host = self.hosts[name]
        out = _ip("netns", "pids", host.netns, check=False).stdout
        keeper = host.keeper.pid if host.keeper is not None else None
        return [int(p) for p in out.split() if int(p) != keeper]

    def listening(self, name: str) -> list[tuple[str, int]]:
        """``(address, port)`` of every TCP socket listening in host ``name``, read from the
        namespace's /proc/net/tcp and tcp6 (through a process inside it)."""
        found = []
        for table in ("tcp", "tcp6"):
            text = self.run(name, ["cat", f"/proc/net/{table}"]).stdout
            found += _listening_in(text)
        return found

    # --- tearing down --------------------------------------------------------------------
    def close(self) -> list[str]:
        """Kills what runs in the hosts and deletes every namespace made; returns what could
        not be removed (empty when nothing is left)."""
        problems = []
        for netns in self._made:
            for pid in _ip("netns", "pids", netns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for host in self.hosts.values():
            for proc in [*host.procs, *([host.keeper] if host.keeper else [])]:
                if proc.poll() is None:
                    proc.kill()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    problems.append(f"{host.name}: process {proc.pid} did not end")
        for netns in reversed(self._made):
            result = _ip("netns", "del", netns, check=False)
            if result.returncode != 0:
                problems.append(f"namespace {netns}: {result.stderr.strip()}")
        for folder in self._etc:
            shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # (only when empty: it may hold others' files)
            ETC_NETNS.rmdir()
        problems += [f"{f} still exists" for f in self._etc if f.exists()]
        left = namespaces() & set(self._made)
        problems += [f"namespace {n} still exists" for n in sorted(left)]
        self._made = [n for n in self._made if n in left]
        return problems


def _listening_in(table: str) -> list[tuple[str, int]]:
    """The listening sockets (state 0A) of a /proc/net/tcp or tcp6 table."""
    found = []
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A":
            address, port = fields[1].rsplit(":", 1)
            found.append((_address(address), int(port, 16)))
    return found


def _address(hex_address: str) -> str:
    """The text form of /proc/net/tcp's little-endian hex address (IPv4 or IPv6)."""
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return ".".join(str(b) for b in reversed(raw))
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
    return str(ipaddress.IPv6Address(b"".join(words)))


def nothing_left(prefix: str) -> list[str]:
    """Namespaces of ``prefix`` (or their /etc/netns folders) that still exist (for a
    teardown check)."""
    made = set(namespaces()) | {p.name for p in ETC_NETNS.glob("*")}
    return sorted(n for n in made if n.startswith(f"{prefix}-"))


__all__ = ["Host", "TestHosts", "can_make_hosts", "namespaces", "nothing_left"]
