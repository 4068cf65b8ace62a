"""A WSGI app served by werkzeug's threaded server in a background thread, with a clean stop."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any, Self

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.log import get_logger

THREAD_PREFIX = "ding_lite-"
"""Every thread this package starts is named with this prefix (tests look for leftovers)."""

_POLL_INTERVAL_S = 0.05  # how often serve_forever looks for a shutdown request

logger = get_logger("interaction.server")


class ServerError(DingLiteError):
    """The server could not start (e.g. the port is taken) or was used out of order."""


def _handler_class(owner: HttpServer) -> type[WSGIRequestHandler]:
    """A request handler that names its thread, lets ``owner`` join it, and logs quietly."""

    class _RequestHandler(WSGIRequestHandler):
        # werkzeug closes every connection after one response; HTTP/1.1 only allows chunking.
        protocol_version = "HTTP/1.1"

        def handle(self) -> None:
            thread = threading.current_thread()
            thread.name = f"{THREAD_PREFIX}http-{owner.name}-request"
            owner._request_threads.add(thread)
            try:
                super().handle()
            finally:
                owner._request_threads.discard(thread)

        def log(self, type: str, message: str, *args: Any) -> None:  # noqa: A002
            # Heartbeats arrive every second: request lines go to DEBUG, not stderr.
            level = logger.warning if type == "error" else logger.debug
            level("%s %s: " + message, owner.name, self.address_string(), *args)

    return _RequestHandler


class Service:
    """``with`` support for the interaction's servers: entering starts, leaving stops.

    Subclasses define ``start()`` (returning ``self``) and ``stop()``.
    """

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class HttpServer(Service):
    """Serves a WSGI app on ``host:port`` from a daemon thread.

    Args:
        app: the WSGI app (a Flask app from :func:`~ding_lite.interaction.app.make_app`).
        host: interface to bind; keep the default 127.0.0.1 unless other machines must call in.
        port: port to bind; 0 picks a free one, readable from :attr:`port` after ``start()``.
        name: short name for threads and logs.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, name: str = "http"):
        self.app = app
        self.host = host
        self.name = name
        self._requested_port = port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._request_threads: set[threading.Thread] = set()

    @property
    def port(self) -> int:
        """The bound port (after ``start()``; still readable after ``stop()``)."""
        if self._port is None:
            raise ServerError(f"server '{self.name}' was never started; call start() first")
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` of the bound socket (after ``start()``)."""
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> HttpServer:
        """Binds the socket and starts serving in a daemon thread.

        Raises:
            ServerError: already started, or the address cannot be bound.
        """
        if self._server is not None:
            raise ServerError(f"server '{self.name}' is already started")
        try:
            server = make_server(
                self.host,
                self._requested_port,
                self.app,
                threaded=True,
                request_handler=_handler_class(self),
            )
        except (OSError, SystemExit) as e:
            # werkzeug reports bind errors on stderr and raises SystemExit; turn that into an
            # error the caller can act on.
            raise ServerError(
                f"cannot serve '{self.name}' on {self.host}:{self._requested_port} "
                f"({e!r}); pick another port or stop the process holding it"
            ) from None
        self._server = server
        self._port = server.port
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL_S},
            name=f"{THREAD_PREFIX}http-{self.name}",
            daemon=True,
        )
        self._thread.start()
        logger.debug("server '%s' listening on %s", self.name, self.address)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stops serving, waits for in-flight requests (bounded), and frees the port.

        Safe to call twice or before ``start()``.

        Args:
            timeout: total seconds to wait for the serving thread and request threads.
        """
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        deadline = time.monotonic() + timeout
        if thread.is_alive():
            server.shutdown()  # returns once serve_forever has left its loop
        thread.join(max(0.0, deadline - time.monotonic()))
        for request_thread in list(self._request_threads):
            request_thread.join(max(0.0, deadline - time.monotonic()))
        server.server_close()
        self._server = None
        self._thread = None
        if thread.is_alive() or self._request_threads:
            logger.warning("server '%s' threads still running after %.1f s", self.name, timeout)
