"""The calling side: a ``requests.Session`` with bounded retries, timeouts and envelope checks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from ding_lite.interaction.auth import bearer_header
from ding_lite.interaction.envelope import (
    Code,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
)
from ding_lite.utils.errors import ConfigError

Timeout = float | tuple[float, float]
"""Seconds: one number for connect and read, or ``(connect, read)``."""

DEFAULT_TIMEOUT: tuple[float, float] = (3.05, 10.0)
_ENVELOPE_KEYS = frozenset({"success", "code", "message", "data"})


def base_url(address: str) -> str:
    """Normalizes ``host:port`` or ``http(s)://host:port`` to ``http(s)://host:port``.

    Raises:
        ConfigError: no host, no or an out-of-range port, another scheme, or a path.
    """
    text = address.strip()
    url = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ConfigError(f"bad address '{address}': {e}; expected host:port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise ConfigError(f"bad address '{address}'; expected host:port, e.g. 127.0.0.1:8700")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ConfigError(f"bad address '{address}'; give only host:port, without a path")
    if port == 0:
        raise ConfigError(f"bad address '{address}'; port 0 cannot be called")
    return f"{parts.scheme}://{parts.netloc}"


def cap_timeout(timeout: Timeout, limit: float) -> Timeout:
    """``timeout`` with each part capped at ``limit`` seconds (at least 1 ms)."""
    limit = max(limit, 0.001)
    if isinstance(timeout, tuple):
        return (min(timeout[0], limit), min(timeout[1], limit))
    return min(timeout, limit)


def describe_failure(error: requests.RequestException) -> str:
    """The innermost useful reason of a requests error (urllib3 wraps it in MaxRetryError)."""
    reason: Any = error.args[0] if error.args else error
    reason = getattr(reason, "reason", reason)
    return str(reason)


class HttpClient:
    """Posts JSON to one peer and unwraps its envelope.

    Connection failures (nothing was sent) and 502/503/504 answers are retried ``retries``
    times with exponential backoff; a read timeout or a dropped connection after the request
    went out is not retried, since the peer may have acted on it.

    Args:
        address: the peer, ``host:port`` or ``http://host:port``.
        token: the shared token sent as ``Authorization: Bearer <token>``.
        timeout: default per-call timeout, seconds or ``(connect, read)``.
        retries: retries after the first try for connection errors and 502/503/504.
        backoff: backoff factor; waits are ``backoff * 2 ** (n - 1)`` s (capped at 1 s),
            the first retry going at once.
    """

    def __init__(
        self,
        address: str,
        token: str,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        retries: int = 3,
        backoff: float = 0.05,
    ) -> None:
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries}")
        self.base_url = base_url(address)
        self.timeout = timeout
        self.retries = retries
        retry = Retry(
            total=retries,
            connect=retries,
            read=False,  # re-raise read errors untouched: a ReadTimeout stays a timeout
            status=retries,
            other=0,
            redirect=0,
            allowed_methods=frozenset({"POST"}),
            status_forcelist=(502, 503, 504),
            backoff_factor=backoff,
            backoff_max=1.0,
            raise_on_status=False,
            respect_retry_after_header=False,
        )
        self._session = requests.Session()
        # Ignore proxy/netrc settings from the environment: the token must go to the peer only.
        self._session.trust_env = False
        self._session.headers.update(bearer_header(token))
        adapter = HTTPAdapter(max_retries=retry, pool_connections=1, pool_maxsize=8)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def post(
        self, path: str, body: dict[str, Any], timeout: Timeout | None = None
    ) -> dict[str, Any]:
        """POSTs ``body`` as JSON to ``path`` and returns the ``data`` of the success envelope.

        Args:
            path: the route, e.g. ``"/master/heartbeat"``.
            body: a JSON-serializable dict (NaN and infinities are refused).
            timeout: this call's timeout; None uses the client's default.

        Returns:
            The envelope's ``data`` (``{}`` when it is null).

        Raises:
            ValueError: ``body`` is not JSON-serializable (nothing was sent).
            RemoteTimeout: no answer within the timeout (also a ``TimeoutError``).
            RemoteUnreachable: the connection failed, after the retries.
            RemoteError: an error envelope, or an answer that is not an envelope.
        """
        try:
            payload = json.dumps(body, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"body for POST {path} is not JSON-serializable: {e}") from e
        headers = {"Content-Type": "application/json"}
        return self.request("POST", path, timeout, data=payload.encode("utf-8"), headers=headers)

    def request(
        self,
        method: str,
        path: str,
        timeout: Timeout | None = None,
        *,
        data: Any = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Sends ``data`` (bytes or a file object, streamed) and returns the ``data`` of the
        success envelope; raises as :meth:`post` does."""
        url = self.base_url + path
        with self._sent(method, url, timeout, data=data, headers=headers) as response:
            return self._unwrap(url, response)

    @contextlib.contextmanager
    def stream(
        self, method: str, path: str, timeout: Timeout | None = None
    ) -> Iterator[requests.Response]:
        """The response of a call whose body is read as it arrives (closed after the block).

        Raises:
            RemoteTimeout, RemoteUnreachable, RemoteError: as :meth:`post`, for the call
                itself (the status is the caller's to check).
        """
        with self._sent(method, self.base_url + path, timeout, stream=True) as response:
            yield response

    @contextlib.contextmanager
    def _sent(
        self, method: str, url: str, timeout: Timeout | None, **kwargs: Any
    ) -> Iterator[requests.Response]:
        timeout = self.timeout if timeout is None else timeout
        try:
            response = self._session.request(
                method, url, timeout=timeout, allow_redirects=False, **kwargs
            )
        except requests.Timeout as e:
            raise RemoteTimeout(
                None,
                Code.TIMEOUT,
                f"{method} {url} got no answer within {timeout} s: {describe_failure(e)}",
            ) from e
        except requests.ConnectionError as e:
            raise RemoteUnreachable(
                None,
                Code.UNREACHABLE,
                f"{method} {url} failed (tried {self.retries + 1} times): {describe_failure(e)}",
            ) from e
        except requests.RequestException as e:
            raise RemoteError(None, Code.BAD_RESPONSE, f"{method} {url} failed: {e}") from e
        with response:
            yield response

    def raise_for_envelope(self, url: str, response: requests.Response) -> None:
        """Raises the RemoteError an error answer carries (or says it is not an envelope)."""
        self._unwrap(url, response)
        raise RemoteError(response.status_code, Code.BAD_RESPONSE, f"{url}: an unexpected answer")

    @staticmethod
    def _unwrap(url: str, response: requests.Response) -> dict[str, Any]:
        status = response.status_code
        method = getattr(response.request, "method", None) or "POST"
        try:
            envelope = response.json()
        except ValueError:
            raise RemoteError(
                status,
                Code.BAD_RESPONSE,
                f"{method} {url} answered with non-JSON: {response.text[:200]!r}",
            ) from None
        if not isinstance(envelope, dict) or not _ENVELOPE_KEYS <= envelope.keys():
            raise RemoteError(
                status, Code.BAD_RESPONSE, f"{method} {url} answered JSON that is not an envelope"
            )
        if not envelope["success"] or status >= 400:
            code = envelope["code"] if isinstance(envelope["code"], int) else Code.BAD_RESPONSE
            raise RemoteError(status, code, f"{method} {url}: {envelope['message']}")
        data = envelope["data"]
        return data if isinstance(data, dict) else {}

    def close(self) -> None:
        """Closes pooled connections. Safe to call twice."""
        self._session.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
