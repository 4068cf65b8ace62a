"""This machine's network interfaces: their IPv4 addresses, and which one reaches a peer.

Linux answers through ``ioctl(SIOCGIFADDR)`` on each interface; elsewhere the addresses the
host name resolves to stand in, with no interface names.
"""

from __future__ import annotations

import contextlib
import socket
import struct

_SIOCGIFADDR = 0x8915  # Linux's ioctl: an interface's IPv4 address


def interfaces() -> list[tuple[str, str]]:
    """``(interface name, IPv4 address)`` of every interface that has one ("" for the name
    where the system cannot say)."""
    found: list[tuple[str, str]] = []
    try:
        import fcntl

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _, name in socket.if_nameindex():
                request = struct.pack("256s", name.encode()[:15])
                with contextlib.suppress(OSError):  # an interface without an IPv4 address
                    answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
                    found.append((name, socket.inet_ntoa(answer[20:24])))
    except (ImportError, OSError):
        with contextlib.suppress(OSError):
            found = [("", a) for a in socket.gethostbyname_ex(socket.gethostname())[2]]
    return found


def interface_towards(host: str) -> str | None:
    """The name of the interface this machine would use to reach ``host`` (an address or a
    name), or None when it cannot tell (no route, a name that does not resolve)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect((host, 9))  # UDP: picks the route and source address, sends nothing
            local = sock.getsockname()[0]
    except OSError:
        return None
    return next((name for name, address in interfaces() if address == local and name), None)
