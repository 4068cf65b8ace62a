"""A WSGI app served by waitress from a background thread, with a bounded stop.

waitress is a production WSGI server: one event loop watches every connection and a fixed
pool of threads runs the app, so a flood of idle or half-sent connections costs file
descriptors, not threads. Its defaults do not survive such a flood here (``select()`` cannot
watch descriptors above 1,024, and a half-open connection lives for two minutes), so
:class:`HttpServer` sets what was measured to work: ``poll()``, a connection limit of 4,096,
a short idle timeout checked every second, and a raised open-file limit.
"""

from __future__ import annotations

import logging
import resource
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from waitress import create_server, wasyncore
from waitress.task import ThreadedTaskDispatcher

from ding_lite.interaction.app import largest_limit
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.log import get_logger

if TYPE_CHECKING:  # typing.Self is Python 3.11+; ding_lite supports 3.10
    from typing_extensions import Self

THREAD_PREFIX = "ding_lite-"
"""Every thread this package starts is named with this prefix (tests look for leftovers)."""

CONNECTION_LIMIT = 4096
"""Open connections a server accepts before it stops accepting until some close."""

OPEN_FILES_TARGET = 65536
"""The soft open-file limit a server raises its process to (capped by the hard limit)."""

_CLEANUP_INTERVAL_S = 1  # how often idle connections are looked for
# How often the event loop wakes when nothing happens. waitress takes whole seconds here
# (int(0.5) == 0 made every server's loop spin at full speed).
_POLL_TIMEOUT_S = 1
_FLUSH_WAIT_S = 0.5  # at stop, how long answers already computed may take to go out
_HEADER_LIMIT_BYTES = 64 * 1024  # our requests carry one token header and a JSON body
_BODY_SLACK_BYTES = 64 * 1024

logger = get_logger("interaction.server")
# With a fixed pool, a burst of requests queues for a few milliseconds by design; waitress
# warns about every queued one, which under load would bury the useful lines.
logging.getLogger("waitress.queue").setLevel(logging.ERROR)

_rlimit_lock = threading.Lock()


class ServerError(DingLiteError):
    """The server could not start (e.g. the port is taken) or was used out of order."""


def raise_open_file_limit(target: int = OPEN_FILES_TARGET) -> int:
    """Raises this process's soft ``RLIMIT_NOFILE`` to ``min(hard, target)`` if it is lower.

    The usual soft limit of 1,024 would let a few hundred idle connections starve a process
    of descriptors for files and sockets of its own. Where the platform refuses, the limit
    stays as it is.

    Returns:
        The soft limit in force afterwards.
    """
    with _rlimit_lock:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = target if hard == resource.RLIM_INFINITY else min(hard, target)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
                soft = wanted
            except (ValueError, OSError) as e:
                logger.debug("could not raise the open-file limit to %d: %s", wanted, e)
        return soft


class _NamedDispatcher(ThreadedTaskDispatcher):
    """waitress's thread pool with threads named after the server, kept so stop can join them."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self.started: list[threading.Thread] = []

    def start_new_thread(self, target: Any, thread_no: int) -> None:
        thread = threading.Thread(
            target=target,
            name=f"{THREAD_PREFIX}http-{self._name}-worker{thread_no}",
            args=(thread_no,),
            daemon=True,
        )
        self.started.append(thread)
        thread.start()


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
    """Serves a WSGI app on ``host:port`` with waitress, from a daemon thread.

    Args:
        app: the WSGI app (a Flask app from :func:`~ding_lite.interaction.app.make_app`).
        host: interface to bind; keep the default 127.0.0.1 unless other machines must call in.
        port: port to bind; 0 picks a free one, readable from :attr:`port` after ``start()``.
        name: short name for threads and logs.
        threads: worker threads running the app; requests beyond them wait in a queue.
        channel_timeout: seconds after which a connection that sent nothing (an idle
            keep-alive, or a half-sent request) is closed.
        connection_limit: open connections accepted at once; past it the server stops
            accepting until some close.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "http",
        *,
        threads: int = 8,
        channel_timeout: float = 10.0,
        connection_limit: int = CONNECTION_LIMIT,
    ) -> None:
        if threads < 1 or channel_timeout <= 0 or connection_limit < 1:
            raise ServerError(
                "threads and connection_limit must be >= 1 and channel_timeout positive, got "
                f"{threads}, {connection_limit}, {channel_timeout}"
            )
        self.app = app
        self.host = host
        self.name = name
        self.threads = threads
        self.channel_timeout = channel_timeout
        self.connection_limit = connection_limit
        self._requested_port = port
        self._server: Any = None
        self._dispatcher: _NamedDispatcher | None = None
        self._map: dict[int, Any] = {}
        self._thread: threading.Thread | None = None
        self._port: int | None = None

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

    def _body_limit(self) -> int:
        # The app answers a body over its own limit with a 413 envelope, so waitress must let
        # such a body through; anything far past it is dropped before it is buffered.
        config = getattr(self.app, "config", None)
        app_limit = config.get("MAX_CONTENT_LENGTH") if isinstance(config, dict) else None
        # A route with a larger limit of its own (a file upload) needs no slack: its body is
        # refused by its declared length before it is read.
        return max(2 * int(app_limit or 1 << 20) + _BODY_SLACK_BYTES, largest_limit(self.app))

    def start(self) -> HttpServer:
        """Binds the socket and starts serving in a daemon thread.

        Raises:
            ServerError: already started, or the address cannot be bound.
        """
        if self._server is not None:
            raise ServerError(f"server '{self.name}' is already started")
        raise_open_file_limit()
        dispatcher = _NamedDispatcher(self.name)
        socket_map: dict[int, Any] = {}
        try:
            server = create_server(
                self.app,
                map=socket_map,
                _dispatcher=dispatcher,
                host=self.host,
                port=self._requested_port,
                threads=self.threads,
                connection_limit=self.connection_limit,
                # Room in the accept queue for a burst as large as the connection limit (the
                # kernel caps it at net.core.somaxconn): when a flood of connections arrives
                # at once, a worker's connection queued behind it is not dropped and
                # retransmitted for seconds.
                backlog=self.connection_limit,
                channel_timeout=self.channel_timeout,
                cleanup_interval=_CLEANUP_INTERVAL_S,
                asyncore_use_poll=True,
                asyncore_loop_timeout=_POLL_TIMEOUT_S,
                max_request_header_size=_HEADER_LIMIT_BYTES,
                max_request_body_size=self._body_limit(),
                ident="ding_lite",
            )
        except (OSError, ValueError) as e:
            # The pipe and socket made before the failed bind are in the map: close them.
            wasyncore.close_all(socket_map, ignore_all=True)
            raise ServerError(
                f"cannot serve '{self.name}' on {self.host}:{self._requested_port} "
                f"({e}); pick another port or stop the process holding it"
            ) from None
        dispatcher.set_thread_count(self.threads)
        self._server, self._dispatcher, self._map = server, dispatcher, socket_map
        self._port = int(server.effective_port)
        self._thread = threading.Thread(
            target=server.run, name=f"{THREAD_PREFIX}http-{self.name}", daemon=True
        )
        self._thread.start()
        logger.debug("server '%s' listening on %s", self.name, self.address)
        return self

    def refresh_body_limit(self) -> None:
        """Applies the app's body limits as they are now (a route's limit set after start):
        waitress refuses a longer declared body before reading it."""
        if self._server is not None:
            self._server.adj.max_request_body_size = self._body_limit()

    def _busy(self) -> bool:
        """Whether a request is queued, running, or has an answer not yet sent."""
        # Read without waitress's locks: a stale answer only shortens or lengthens one poll.
        channels = list(self._server.active_channels.values())
        return any(ch.requests or ch.total_outbufs_len for ch in channels)

    def stop(self, timeout: float = 5.0) -> None:
        """Stops accepting, lets in-flight requests finish (bounded), and frees the port.

        Safe to call twice or before ``start()``.

        Args:
            timeout: total seconds to wait for in-flight requests and the server's threads.
        """
        server, thread, dispatcher = self._server, self._thread, self._dispatcher
        if server is None or thread is None or dispatcher is None:
            return
        deadline = time.monotonic() + timeout
        loop_alive = thread.is_alive()
        listener_closed = threading.Event()

        def close_listener() -> None:
            server.accepting = False
            wasyncore.dispatcher.close(server)  # the listening socket only; the loop goes on
            listener_closed.set()

        # The event loop owns the socket map: changes to it run in its thread, via the trigger.
        if loop_alive:
            server.trigger.pull_trigger(close_listener)
            listener_closed.wait(max(0.0, min(1.0, deadline - time.monotonic())))
        while self._busy() and time.monotonic() < deadline:
            time.sleep(0.01)
        dispatcher.shutdown(cancel_pending=True, timeout=max(0.0, deadline - time.monotonic()))
        # A handler that just returned leaves its answer in a buffer the loop still sends.
        flush_deadline = min(deadline, time.monotonic() + _FLUSH_WAIT_S)
        while self._busy() and time.monotonic() < flush_deadline:
            time.sleep(0.01)
        if thread.is_alive():
            try:
                server.trigger.pull_trigger(lambda: wasyncore.close_all(self._map, ignore_all=True))
            except OSError:  # the loop closed its trigger meanwhile: it is closing all
                pass
            thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            logger.warning("server '%s' loop still running after %.1f s", self.name, timeout)
        # Closing twice is harmless; this frees the port even when the loop thread is stuck.
        wasyncore.close_all(self._map, ignore_all=True)
        for worker in dispatcher.started:
            worker.join(max(0.0, deadline - time.monotonic()))
        if any(worker.is_alive() for worker in dispatcher.started):
            logger.warning(
                "server '%s' request threads still running after %.1f s", self.name, timeout
            )
        self._server = None
        self._thread = None
        self._dispatcher = None
