"""Any mutant of a real status.json is shown or refused in one line, never a crash (issue 40,
acceptance 2, the status.json half).

A real run's status.json (the session's ``selfplay_run``) is mutated by hypothesis: values
of the wrong type, out of range, huge, NaN and infinite, with control characters, nested
deep; keys removed and added; the text cut or spoiled. Each mutant goes to both readers, in
this process: ``ding-lite status`` (exit 0 and an 80-column page without control
characters, or exit 2 and one line) and the dashboard's status route (200, or 422 with the
line); both must agree.
"""

from __future__ import annotations

import contextlib
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from helpers import json_paths
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ding_lite.entry.cli.command import main
from ding_lite.entry.live.dashboard import make_dashboard_app
from ding_lite.entry.live.status_file import read_status
from ding_lite.entry.live.status_schema import STATUS_FIELDS

# Fragments json.dumps cannot write, spliced into the text as they are.
RAW = ("9" * 5000, "[" * 100_000 + "]" * 100_000, "1e999", "-1e999", "NaN", "Infinity")
TEXTS = ("\x1b[2J\x1b[31m", "\x1b]0;owned\x07", "a\nb\rc", "\u202egnp.exe", "\x00\x9b2J", "")
# Names the views know, so that added keys are often ones they read.
KNOWN_KEYS = (
    *STATUS_FIELDS,
    "evaluates",
    "return_mean",
    "win_rate",
    "recent",
    "mean",
    "max",
    "written",
    "dropped_stale",
)


class Raw(str):
    """A fragment of JSON text put in unquoted."""


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([-1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 10**30, -(10**30)]),
    st.floats(),  # NaN and infinities included: json.dumps writes them as NaN, Infinity
    st.text(max_size=12),
    st.sampled_from(TEXTS + ("running", "finished", "parallel", "lots")),
    st.sampled_from(RAW).map(Raw),
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def like(value: Any) -> st.SearchStrategy:
    """Values of the same JSON type as ``value``, in range or not."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-3, 2**64) | st.sampled_from([0, 2**63 - 1, 2**63, 2**31])
    if isinstance(value, float):
        return st.floats() | st.floats(-1e20, 1e20)
    if isinstance(value, str):
        return st.text(max_size=12) | st.sampled_from(TEXTS).map(lambda t: value + t)
    return values


def parent_of(doc: Any, path: tuple) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


@st.composite
def mutants(draw, doc: dict) -> bytes:
    """``doc`` with one to four edits, as the bytes of a file."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 4))):
        where = json_paths(doc)
        action = draw(st.sampled_from(("like", "like", "like", "set", "delete", "add")))
        if action == "add" or not where:
            dicts = [()] + [p for p in where if isinstance(parent_of(doc, (*p, None)), dict)]
            target = parent_of(doc, (*draw(st.sampled_from(dicts)), None))
            key = draw(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8))
            target[key] = draw(values)
            continue
        path = draw(st.sampled_from(where))
        parent = parent_of(doc, path)
        if action == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(like(parent[path[-1]]) if action == "like" else values)
    raws: list[str] = []

    def mark(node: Any) -> Any:  # Raw fragments become placeholders json.dumps can write
        if isinstance(node, Raw):
            raws.append(str(node))
            return f"@raw{len(raws) - 1}@"
        if isinstance(node, dict):
            return {k: mark(v) for k, v in node.items()}
        if isinstance(node, list):
            return [mark(v) for v in node]
        return node

    text = json.dumps(mark(doc), indent=draw(st.sampled_from([None, 1])))
    for i, raw in enumerate(raws):
        text = text.replace(f'"@raw{i}@"', raw, 1)
    data = text.encode("utf-8", "surrogatepass")
    spoil = draw(st.sampled_from(("none",) * 8 + ("cut", "byte")))
    if spoil == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif spoil == "byte":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at:]
    return data


@pytest.fixture(scope="module")
def real_status(selfplay_run) -> dict:
    doc = json.loads((selfplay_run / "status.json").read_text())
    assert read_status(selfplay_run) == doc  # the reader keeps every field a run writes
    return doc


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "run"


@pytest.fixture(scope="module")
def dashboard(target) -> Any:
    return make_dashboard_app([target]).test_client()


def strict_json(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"the dashboard sent {name}")

    return json.loads(text, parse_constant=refuse)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_any_mutant_of_a_real_status_json_is_shown_or_refused_in_one_line(
    real_status, target, dashboard, data
):
    target.mkdir(exist_ok=True)
    (target / "status.json").write_bytes(data.draw(mutants(real_status)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["status", str(target)])
    out, err = out.getvalue(), err.getvalue()
    event("shown" if code == 0 else "refused")
    if code == 2:
        assert out == "" and err.count("\n") == 1, err
        assert err.startswith(f"ding-lite: error: cannot read {target}/status.json: "), err
    else:
        assert code == 0 and err == "", (code, err)
        for line in out.splitlines():
            assert len(line) <= 80, line
            assert not any(unicodedata.category(ch) == "Cc" for ch in line), line
    answer = dashboard.get("/api/runs/0/status")
    assert answer.status_code == (200 if code == 0 else 422), answer.data[:300]
    body = strict_json(answer.get_data(as_text=True))
    if code == 2:
        assert body["state"] == "unreadable" and body["error"] in err
