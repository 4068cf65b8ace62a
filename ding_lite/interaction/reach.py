"""Whether the master can reach a registering worker at the address it gives.

A worker on another host registers the address the coordinator is to send its tasks to. One
that advertises an address the coordinator's host cannot dial (a loopback address, a name
only its own host resolves, a port a firewall drops) would register, never receive a task
and be declared lost a heartbeat tolerance later; checked at registration, it stops at once
with one line naming the address.
"""

from __future__ import annotations

from ding_lite.interaction.client import HttpClient
from ding_lite.interaction.envelope import ApiError, Code, RemoteError
from ding_lite.interaction.protocol import SLAVE_PING
from ding_lite.utils.log import get_logger

CALLBACK_TIMEOUT = (3.05, 5.0)  # the ping that checks a registering worker can be reached
logger = get_logger("interaction.master")


def call_back(worker_id: str, address: str, token: str) -> None:
    """Pings the worker ``worker_id`` at ``address`` (one retry).

    Raises:
        ApiError: 400 naming the address and what to change, when it cannot be reached.
    """
    client = HttpClient(address, token, timeout=CALLBACK_TIMEOUT, retries=1)
    try:
        client.post(SLAVE_PING, {})
    except RemoteError as e:
        logger.warning("refused registration of '%s': cannot reach %s", worker_id, address)
        raise ApiError(
            Code.BAD_REQUEST,
            f"the coordinator cannot reach this worker at {address} ({e.message}); give it "
            "--host (or --advertise) an address the coordinator's host can reach",
        ) from None
    finally:
        client.close()
