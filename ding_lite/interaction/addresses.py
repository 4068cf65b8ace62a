"""The addresses other machines can use to reach a server bound to every interface.

A server given ``--host 0.0.0.0`` listens on all of the machine's addresses, but
``0.0.0.0:<port>`` is no address another machine can dial: what a command prints for the
user to hand to other machines is one of the interfaces' own addresses instead.
"""

from __future__ import annotations

from ding_lite.utils.interfaces import interfaces

WILDCARDS = ("0.0.0.0", "::", "")


def interface_addresses() -> list[str]:
    """The IPv4 addresses of this machine's interfaces, loopback ones last."""
    unique = list(dict.fromkeys(address for _, address in interfaces()))
    return sorted(unique, key=lambda a: a.startswith("127."))


def reachable(address: str) -> tuple[str, list[str]]:
    """``(address to show, every address it is reachable at)`` for a bound ``host:port``.

    A wildcard host becomes the machine's first non-loopback interface address (127.0.0.1
    when it has none); any other address is returned as it is.
    """
    host, _, port = address.rpartition(":")
    if host.strip("[]") not in WILDCARDS:
        return address, [address]
    every = [f"{a}:{port}" for a in interface_addresses()] or [f"127.0.0.1:{port}"]
    return every[0], every


def is_loopback(address: str) -> bool:
    """Whether ``host:port`` names this machine's loopback (127.x, ::1, localhost): a worker
    there shares the coordinator's host, so no network cut can come between them."""
    host = address.rpartition(":")[0].strip("[]").lower()
    return host == "localhost" or host == "::1" or host.startswith("127.")
