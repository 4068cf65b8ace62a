"""Fault injection for the crash tests: kill this process at a named point of its work.

Off unless ``DING_LITE_FAILPOINTS`` names a plan file (the chaos tests write one). Each line
of the plan is ``<point>:<n>``: the n-th time this process reaches ``<point>``, the first
line is removed from the plan (so a restarted process goes on to the next line) and the
process kills itself with SIGKILL, as an operator's ``kill -9`` would. Nothing else in
ding_lite reads the variable.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

ENV = "DING_LITE_FAILPOINTS"

_hits: Counter[str] = Counter()


def reached(point: str, before_kill: object = None) -> None:
    """Counts a visit of ``point``; kills the process if the plan says this is the one.

    Args:
        point: the point's name, e.g. ``"coordinator_state.take"``.
        before_kill: called right before the kill (to leave a half-written file behind, as
            a kill in the middle of a write would).
    """
    plan_file = os.environ.get(ENV)
    if not plan_file:
        return
    _hits[point] += 1
    plan = Path(plan_file)
    try:
        lines = [line.strip() for line in plan.read_text().splitlines() if line.strip()]
    except OSError:
        return
    if not lines:
        return
    name, _, count = lines[0].rpartition(":")
    if name != point or not count.isdigit() or _hits[point] != int(count):
        return
    plan.write_text("".join(f"{line}\n" for line in lines[1:]))
    if callable(before_kill):
        before_kill()
    os.kill(os.getpid(), signal.SIGKILL)
