"""Free TCP ports, without torch (the coordinator's process never imports it)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at ``host`` (bound and released at once), for a
    group's ``MASTER_PORT`` or a coordinator's address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
