"""``ding-lite dashboard RUN_DIR [RUN_DIR ...]``: a local web page that shows runs live.

The page (``static/``, shipped in the package: no framework, nothing fetched from the
network) polls two read-only routes per run: its status.json and the tensorboard scalars
logged since the last poll. The server reads files of the run dirs it was given and
nothing else: runs are addressed by their index on the command line, never by a path
from the request, and it adds no route to the coordinator and needs no token. It binds
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, request, send_from_directory

from ding_lite.entry.live.status_file import STATUS_FILE, read_status
from ding_lite.entry.live.status_schema import StatusFileError
from ding_lite.entry.live.terminal import liveness
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.tb_tail import TbTail
from ding_lite.utils.text import printable

STATIC = Path(__file__).parent / "static"
MAX_POINTS_PER_ANSWER = 20_000  # a client far behind catches up over several polls


class ScalarFeed:
    """Every scalar a run's tensorboard files hold, read a piece at a time as they grow.

    Series from several writers (a parallel run's coordinator and learners, a restarted
    learner) that share a tag are one series. Points keep their arrival order, so a client
    asks for those after the cursor it was last given.
    """

    def __init__(self, run_path: Path) -> None:
        self._tail = TbTail(run_path / "tb", warn=_say)
        self._points: list[tuple[float, int, str, float]] = []  # wall, step, tag, value
        self._lock = threading.Lock()

    def since(self, cursor: int) -> dict[str, Any]:
        """The points after ``cursor`` by tag (``[step, value, wall time]``), and the next
        cursor."""
        with self._lock:
            # A damaged record or an unreadable file is said once on stderr and skipped.
            self._points.extend(self._tail.read_new())
            cursor = min(max(cursor, 0), len(self._points))
            chunk = self._points[cursor : cursor + MAX_POINTS_PER_ANSWER]
        series: dict[str, list[list[float]]] = {}
        for wall, step, tag, value in chunk:
            if value == value and abs(value) != float("inf"):  # JSON has no NaN
                series.setdefault(tag, []).append([step, value, wall])
        return {"cursor": cursor + len(chunk), "series": series}


def _say(line: str) -> None:
    print(f"dashboard: {printable(line)}", file=sys.stderr, flush=True)


def is_loopback(host: str) -> bool:
    """Whether a server bound to ``host`` can be reached from this machine only."""
    name = _bare(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def _bare(name: str) -> str:
    """A host name or address as a Host header's is compared: no brackets, lower case, no
    final dot."""
    return name.strip().strip("[]").lower().rstrip(".")


class HostCheck:
    """Which ``Host`` headers the dashboard answers.

    A web page on another site can make a browser send it requests by DNS rebinding: its
    name (``evil.example``) is made to resolve to 127.0.0.1, and the browser's same-origin
    rule lets the page read the answers, which come with ``Host: evil.example:PORT``. So a
    request is answered only when its Host names this machine: ``localhost``, a loopback
    address, or the address the dashboard was bound to; when bound beyond loopback, also
    any IP address (no rebinding goes through an address: the page's origin would be the
    address itself) and the machine's own names. ``allowed`` adds names (one a proxy in
    front of it uses). The port is not compared: a rebinding page can only reach the port
    its own URL names, and an ``ssh -L`` forward may use another one.

    Args:
        bind_host: the address the server binds.
        allowed: more host names to answer.
    """

    def __init__(self, bind_host: str, allowed: Sequence[str] = ()) -> None:
        self.local = is_loopback(bind_host)
        names = {"localhost", _bare(bind_host), *(_bare(name) for name in allowed)}
        if not self.local:
            names |= {_bare(socket.gethostname()), _bare(socket.getfqdn())}
        self.names = frozenset(names - {""})

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header (None: none) is answered."""
        name = _host_name(header or "")
        if name is None:
            return False
        if name in self.names:
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_loopback or not self.local


def _host_name(header: str) -> str | None:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``); None when it
    is not one."""
    header = header.strip()
    if header.startswith("["):
        name, bracket, port = header[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return None
        port = port[1:]
    else:
        name, _, port = header.partition(":")
    if ":" in port or (port and not (port.isascii() and port.isdigit())) or not name:
        return None
    return _bare(name)


def make_dashboard_app(
    run_paths: list[Path], *, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = ()
) -> Flask:
    """The Flask app serving the page and the read-only routes of ``run_paths``.

    Args:
        run_paths: the run dirs, addressed by their index.
        host: the address the server binds (see :class:`HostCheck`).
        allowed_hosts: more ``Host`` names to answer.
    """
    app = Flask("ding_lite.dashboard", static_folder=None)
    feeds = [ScalarFeed(d) for d in run_paths]
    hosts = HostCheck(host, allowed_hosts)

    @app.before_request
    def check_host() -> Response | None:
        if hosts.allows(request.headers.get("Host")):
            return None
        return _json({"error": "this dashboard answers requests for this machine only"}, 403)

    def run_index(i: int) -> Path:
        if not 0 <= i < len(run_paths):
            abort(404)
        return run_paths[i]

    @app.get("/")
    def index() -> Response:
        return send_from_directory(STATIC, "dashboard.html", max_age=0)

    @app.get("/static/<name>")
    def static_file(name: str) -> Response:
        return send_from_directory(STATIC, name, max_age=0)  # refuses paths outside STATIC

    @app.get("/api/runs")
    def runs() -> Response:
        listed = [{"id": i, "name": d.name, "dir": str(d)} for i, d in enumerate(run_paths)]
        return _json({"runs": listed})

    @app.get("/api/runs/<int:i>/status")
    def status(i: int) -> Response:
        run_path = run_index(i)
        try:
            doc = read_status(run_path)
        except FileNotFoundError:
            doc = {"state": "missing", "error": f"no {STATUS_FILE} in {run_path} (yet)"}
        except StatusFileError as err:  # damaged: the page shows the one line
            doc = {"state": "unreadable", "error": str(err), "now": time.time(), "liveness": ""}
            return _json(doc, 422)
        return _json({**doc, "now": time.time(), "liveness": liveness(doc)})

    @app.get("/api/runs/<int:i>/scalars")
    def scalars(i: int) -> Response:
        run_index(i)
        try:
            cursor = int(request.args.get("cursor", "0"))
        except ValueError:
            return _json({"error": "cursor must be an integer"}, 400)
        return _json(feeds[i].since(cursor))

    @app.after_request
    def no_cache(response: Response) -> Response:
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; connect-src 'self'"
        )
        return response

    return app


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(json.dumps(body, allow_nan=False), status, mimetype="application/json")


def check_run_dirs(paths: list[str]) -> list[Path]:
    """The run dirs, resolved; a path that is no folder is a one-line error."""
    dirs = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(f"no such run dir: {raw}")
        dirs.append(path)
    return dirs


def beyond_loopback(host: str, port: int) -> str:
    """The line said when the dashboard is bound to ``host``, beyond loopback."""
    return (
        f"ding-lite: warning: the dashboard listens on {printable(host)}, beyond loopback: "
        f"anyone who reaches port {port} reads these runs' status and curves, with no token; "
        f"prefer --host 127.0.0.1 and ssh -L {port}:127.0.0.1:{port}"
    )


def dashboard_command(
    paths: list[str],
    host: str,
    port: int,
    open_for: float | None,
    allowed_hosts: Sequence[str] = (),
) -> int:
    """Serves the dashboard until Ctrl-C (or ``open_for`` seconds); the CLI's exit code.

    Bound beyond loopback it says so on stderr, in one line: the page has no token.
    """
    from ding_lite.interaction.server import HttpServer, ServerError

    app = make_dashboard_app(check_run_dirs(paths), host=host, allowed_hosts=allowed_hosts)
    server = HttpServer(app, host=host, port=port, name="dashboard", threads=4)
    try:
        server.start()
    except ServerError as err:
        raise ConfigError(str(err)) from None
    try:  # from here on Ctrl-C stops the server and exits 0, even before the loop
        if not is_loopback(host):
            print(beyond_loopback(host, server.port), file=sys.stderr, flush=True)
        print(f"dashboard of {len(paths)} run(s) at http://{server.address}/ (Ctrl-C stops it)")
        sys.stdout.flush()
        deadline = None if open_for is None else time.monotonic() + open_for
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
