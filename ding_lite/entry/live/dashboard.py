"""``ding-lite dashboard RUN_DIR [RUN_DIR ...]``: a local web page that shows runs live.

The page (``static/``, shipped in the package: no framework, nothing fetched from the
network) polls two read-only routes per run: its status.json and the tensorboard scalars
logged since the last poll. The server reads files of the run dirs it was given and
nothing else: runs are addressed by their index on the command line, never by a path
from the request, and it adds no route to the coordinator and needs no token. It binds
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, request, send_from_directory

from ding_lite.entry.live.status_file import STATUS_FILE, read_status
from ding_lite.entry.live.terminal import liveness
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import TbTail

STATIC = Path(__file__).parent / "static"
MAX_POINTS_PER_ANSWER = 20_000  # a client far behind catches up over several polls


class ScalarFeed:
    """Every scalar a run's tensorboard files hold, read a piece at a time as they grow.

    Series from several writers (a parallel run's coordinator and learners, a restarted
    learner) that share a tag are one series. Points keep their arrival order, so a client
    asks for those after the cursor it was last given.
    """

    def __init__(self, run_path: Path) -> None:
        self._tail = TbTail(run_path / "tb")
        self._points: list[tuple[float, int, str, float]] = []  # wall, step, tag, value
        self._lock = threading.Lock()

    def since(self, cursor: int) -> dict[str, Any]:
        """The points after ``cursor`` by tag (``[step, value, wall time]``), and the next
        cursor."""
        with self._lock:
            try:
                self._points.extend(self._tail.read_new())
            except (OSError, ValueError) as err:  # a damaged file: the page says so
                print(f"dashboard: cannot read {self._tail.tb_dir}: {err}", file=sys.stderr)
            cursor = min(max(cursor, 0), len(self._points))
            chunk = self._points[cursor : cursor + MAX_POINTS_PER_ANSWER]
        series: dict[str, list[list[float]]] = {}
        for wall, step, tag, value in chunk:
            if value == value and abs(value) != float("inf"):  # JSON has no NaN
                series.setdefault(tag, []).append([step, value, wall])
        return {"cursor": cursor + len(chunk), "series": series}


def make_dashboard_app(run_paths: list[Path]) -> Flask:
    """The Flask app serving the page and the read-only routes of ``run_paths``."""
    app = Flask("ding_lite.dashboard", static_folder=None)
    feeds = [ScalarFeed(d) for d in run_paths]

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
        except ValueError as err:
            doc = {"state": "unreadable", "error": str(err)}
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


def dashboard_command(paths: list[str], host: str, port: int, open_for: float | None) -> int:
    """Serves the dashboard until Ctrl-C (or ``open_for`` seconds); the CLI's exit code."""
    from ding_lite.interaction.server import HttpServer, ServerError

    app = make_dashboard_app(check_run_dirs(paths))
    server = HttpServer(app, host=host, port=port, name="dashboard", threads=4)
    try:
        server.start()
    except ServerError as err:
        raise ConfigError(str(err)) from None
    print(f"dashboard of {len(paths)} run(s) at http://{server.address}/ (Ctrl-C stops it)")
    sys.stdout.flush()
    try:
        deadline = None if open_for is None else time.monotonic() + open_for
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
