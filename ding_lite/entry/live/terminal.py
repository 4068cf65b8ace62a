"""``ding-lite status RUN_DIR``: a run's status.json as a page of text, 80 columns wide.

``--watch`` redraws it every ``--interval`` seconds until the run ends (or Ctrl-C). A run
whose process is gone without a final state (killed, or the machine went down) is shown as
such: its last update's age and that its pid no longer runs.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ding_lite.entry.live.status_file import FINAL_STATES, pid_alive, read_status
from ding_lite.entry.live.status_schema import StatusFileError
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.text import printable

WIDTH = 80
STALE_S = 10.0  # a live run writes every second: this much silence is worth saying
WORKER_COLUMNS = (("ID", 14), ("ROLE", 11), ("HOST", 15), ("STATE", 9), ("BEAT", 7))
# The ledger in the order a file moves: written, waiting, with the learner, then its fate.
LEDGER_ORDER = (
    "written",
    "waiting",
    "in_learner",
    "trained",
    "dropped_stale",
    "dropped_invalid",
    "dropped_rollback",
    "dropped_run_end",
)


def _num(value: Any, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _since(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def liveness(doc: dict[str, Any], now: float | None = None) -> str:
    """``""`` for a run that is live or ended properly; else why its figures are old."""
    if doc.get("state") in FINAL_STATES:
        return ""
    age = (now or time.time()) - float(doc.get("updated_at") or 0.0)
    if doc.get("host") == socket.gethostname() and pid_alive(doc.get("pid")) is False:
        return f"process {doc.get('pid')} is gone; last update {_since(age)} ago"
    if age > STALE_S:
        return f"no update for {_since(age)}"
    return ""


def render_status(doc: dict[str, Any], now: float | None = None) -> str:
    """The text view of one status document as :func:`~.status_file.read_status` returns
    it (each line at most :data:`WIDTH` columns, no control characters)."""
    now = now or time.time()
    cap = doc.get("max_env_step")
    steps = _num(doc.get("envstep")) + (f" / {cap:,}" if cap else "")
    ev, best, lag = doc.get("eval") or {}, doc.get("best_eval") or {}, doc.get("lag") or {}
    eval_text = _num(ev.get("return_mean"), ".1f")
    if ev.get("policy_version") is not None:
        eval_text += f" (v{ev['policy_version']})"
    if ev.get("win_rate") is not None:
        eval_text += f" win {ev['win_rate']:.0%}"
    best_text = _num(best.get("return_mean"), ".1f")
    state = str(doc.get("state", "?"))
    if doc.get("stop_reason"):
        state += f" ({doc['stop_reason']})"
    lines = [
        f"{state}  [{doc.get('pipeline', '?')}]  {doc.get('exp_name', '?')}",
        f"dir {doc.get('exp_dir', '?')}",
        f"pid {doc.get('pid')} on {doc.get('host')}, elapsed "
        f"{_since(float(doc.get('elapsed_s') or 0))}, updated "
        f"{_since(max(now - float(doc.get('updated_at') or now), 0))} ago",
    ]
    if warning := liveness(doc, now):
        lines.append(f"!! {warning}")
    if doc.get("stop_detail"):
        lines.append(f"!! {doc['stop_detail']}")
    lines += [
        f"env steps {steps}   iteration {_num(doc.get('iteration'))}   SPS {_num(doc.get('sps'))}",
        f"policy v{_num(doc.get('policy_version'))}   eval {eval_text}   best {best_text}   "
        f"train return {_num(doc.get('train_return'), '.1f')}",
        f"lag mean {_num(lag.get('mean'), '.2f')}  max {_num(lag.get('max'))}  recent "
        + (" ".join(f"{x:g}" for x in (lag.get("recent") or [])[-10:]) or "-"),
        f"restarts {doc.get('restarts', 0)}   failed tasks {doc.get('failed_tasks', 0)}   "
        f"dropped env steps {_num(doc.get('dropped_env_steps'))}",
    ]
    ledger = doc.get("ledger")
    if ledger:
        keys = [k for k in LEDGER_ORDER if k in ledger] + sorted(set(ledger) - set(LEDGER_ORDER))
        lines += _packed("ledger", [f"{k.removeprefix('dropped_')} {ledger[k]}" for k in keys])
    if doc.get("league"):
        lines += _league_lines(doc["league"])
    if doc.get("waiting_on"):
        lines.append(f"waiting on {doc['waiting_on']}")
    lines += ["", _worker_header(), *(_worker_row(w) for w in doc.get("workers") or [])]
    return "\n".join(_fit(line) for line in lines)


def _league_lines(league: dict[str, Any]) -> list[str]:
    """The league's counts and its strongest members (``ding-lite league`` has them all)."""
    head = (
        f"league  pool {league.get('pool', 0)}   players {league.get('players', 0)}   "
        f"matches {_num(league.get('matches'))}"
    )
    if league.get("exploitability") is not None:
        head += f"   exploitability {league['exploitability']:.4f}"
    rows = [
        f"  {str(m.get('name')):<34} {str(m.get('kind')):<8} {m.get('rating', 0):>7.0f}  "
        f"main scores {_num(m.get('main_score'), '.2f')}"
        for m in league.get("top") or []
    ]
    return [head, *rows]


def _packed(label: str, items: list[str]) -> list[str]:
    """``label`` then ``items``, as few lines as fit :data:`WIDTH` (later lines indented)."""
    lines, line = [], label
    for item in items:
        if len(line) + 2 + len(item) > WIDTH and line.strip():
            lines.append(line)
            line = " " * len(label)
        line += "  " + item
    return [*lines, line]


def _worker_header() -> str:
    head = "".join(name.ljust(width) for name, width in WORKER_COLUMNS)
    return head + "VERSION".ljust(9) + "ROLLOUTS"


def _worker_row(w: dict[str, Any]) -> str:
    beat = w.get("heartbeat_age_s")
    role = str(w.get("role", "?")) + ("*" if w.get("evaluates") else "")
    cells = (w.get("id"), role, w.get("host") or "-", w.get("state"), _beat(beat))
    row = "".join(
        _fit(str(cell), width - 1).ljust(width)
        for cell, (_, width) in zip(cells, WORKER_COLUMNS, strict=True)
    )
    version = "-" if w.get("version") is None else f"v{w['version']}"
    return row + version.ljust(9) + _num(w.get("rollouts"))


def _beat(age: float | None) -> str:
    return "-" if age is None else f"{age:.1f}s"


def _fit(text: str, width: int = WIDTH) -> str:
    return printable(text, width)  # the file's text was cleaned when read; this is the guard


def status_command(run_path: str, watch: bool, interval: float) -> int:
    """Prints the status of ``run_path`` (redrawn while ``watch``); the CLI's exit code."""
    path = Path(run_path)
    while True:
        if not path.is_dir():
            raise DingLiteError(printable(f"no such run dir: {run_path}"))
        try:
            doc = read_status(path)
        except FileNotFoundError:
            raise DingLiteError(
                printable(
                    f"{run_path} has no status.json (not a run dir, or one from before "
                    "ding_lite wrote it)"
                )
            ) from None
        except StatusFileError as err:  # damaged: one line that names the field
            raise DingLiteError(printable(f"cannot read {err}")) from None
        text = render_status(doc)
        with contextlib.suppress(BrokenPipeError):  # `| head` closed the pipe
            if not watch:
                print(text, flush=True)
                return 0
            sys.stdout.write("\x1b[H\x1b[2J" + text + "\n")  # home, clear screen, redraw
            sys.stdout.flush()
        if doc.get("state") in FINAL_STATES or liveness(doc):
            return 0  # nothing more will come
        time.sleep(interval)
