"""The JSON envelope every response carries, its error codes, and the errors built on it.

Every response body, success or failure, is one JSON object::

    {"success": bool, "code": int, "message": str, "data": dict | null}

``code`` is :class:`Code`; its first three digits are the HTTP status the server sends with it
(``4090`` comes with HTTP 409). The ``5020``/``5030``/``5040`` codes never travel on the wire:
the client uses them for a response that is not an envelope, a server it cannot reach, and a
call that timed out.
"""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any

from ding_lite.utils.errors import DingLiteError


class Code(IntEnum):
    """Error codes of the envelope; ``code // 10`` is the matching HTTP status (0 -> 200)."""

    OK = 0
    BAD_REQUEST = 4000
    UNAUTHORIZED = 4010
    NOT_FOUND = 4040
    METHOD_NOT_ALLOWED = 4050
    CONFLICT = 4090
    LENGTH_REQUIRED = 4110
    TOO_LARGE = 4130
    BUSY = 4290  # try again later (a receiver that is full or not ready)
    HANDLER_ERROR = 5000
    # Client side only: the peer answered something that is not an envelope, could not be
    # reached, or did not answer in time.
    BAD_RESPONSE = 5020
    UNREACHABLE = 5030
    TIMEOUT = 5040

    @property
    def http_status(self) -> int:
        """The HTTP status sent with this code."""
        return 200 if self is Code.OK else int(self) // 10

    @classmethod
    def from_http_status(cls, status: int) -> Code:
        """The code for an HTTP error status (a status without its own code maps to 4000/5000)."""
        try:
            return cls(status * 10)
        except ValueError:
            return cls.HANDLER_ERROR if status >= 500 else cls.BAD_REQUEST


def envelope(
    success: bool, code: int, message: str = "", data: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Builds the envelope dict (not yet serialized)."""
    return {"success": success, "code": int(code), "message": message, "data": data}


def success_body(data: dict[str, Any] | None = None) -> str:
    """The serialized success envelope carrying ``data`` (``{}`` when None).

    Raises:
        TypeError, ValueError: ``data`` is not JSON-serializable (NaN and infinities included).
    """
    return json.dumps(envelope(True, Code.OK, "ok", {} if data is None else data), allow_nan=False)


def error_body(code: Code, message: str) -> str:
    """The serialized error envelope for ``code`` with a message meant for the caller."""
    return json.dumps(envelope(False, code, message, None))


class ApiError(DingLiteError):
    """Raised by a route handler to answer with a 4xx envelope; nothing must have changed yet.

    Args:
        code: the envelope code; its HTTP status is derived from it.
        message: what the caller should change, e.g. ``"unknown worker 'c7'"``.
    """

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class RemoteError(DingLiteError):
    """A call to a peer failed: an error envelope, a non-JSON answer, or no answer at all.

    Attributes:
        status: the HTTP status, or None when no response came back.
        code: the envelope code (a :class:`Code` value when known).
        message: the peer's message, or a description of the transport failure.
    """

    def __init__(self, status: int | None, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed later: no answer, "try later" (429) or a
        failure of the peer (5xx), as opposed to a refusal of what was sent."""
        return self.status is None or self.status == 429 or self.status >= 500

    def __str__(self) -> str:
        status = "no response" if self.status is None else f"HTTP {self.status}"
        return f"{self.message} ({status}, code {self.code})"


class RemoteUnreachable(RemoteError):
    """The peer could not be reached (connection refused or reset) after the allowed retries."""


class RemoteTimeout(RemoteError, TimeoutError):
    """The peer did not answer within the call's timeout."""
