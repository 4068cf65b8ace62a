"""Master / Slave over HTTP: the transport of the parallel pipeline.

Tasks travel as JSON dicts; this package knows nothing of policies, learners or tensors. Every
request carries the shared token, every body is size-limited and schema-checked, every answer
is the JSON envelope ``{"success", "code", "message", "data"}``, and every call has a timeout.
"""

from ding_lite.interaction.app import json_route, make_app
from ding_lite.interaction.auth import check_bearer, generate_token, resolve_token
from ding_lite.interaction.client import HttpClient, base_url
from ding_lite.interaction.envelope import (
    ApiError,
    Code,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
)
from ding_lite.interaction.master import Master
from ding_lite.interaction.protocol import ROLES, TaskResult, WorkerInfo
from ding_lite.interaction.role_slaves import SLAVES, CollectorSlave, LearnerSlave
from ding_lite.interaction.server import HttpServer, ServerError
from ding_lite.interaction.slave import RegistrationError, Slave, TaskHandler

__all__ = [
    "ROLES",
    "SLAVES",
    "ApiError",
    "Code",
    "CollectorSlave",
    "HttpClient",
    "HttpServer",
    "LearnerSlave",
    "Master",
    "RegistrationError",
    "RemoteError",
    "RemoteTimeout",
    "RemoteUnreachable",
    "ServerError",
    "Slave",
    "TaskHandler",
    "TaskResult",
    "WorkerInfo",
    "base_url",
    "check_bearer",
    "generate_token",
    "json_route",
    "make_app",
    "resolve_token",
]
