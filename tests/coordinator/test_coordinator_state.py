"""The coordinator's state as a record: every field survives the file, checked on the way in.

The strategies are built from the record's field types (the same types its JSON form is
built from), so a field added to :class:`CoordinatorState`, :class:`CollectorRecord` or
:class:`RunStatus` is generated, saved and taken back here with no change to this file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ding_lite.coordinator import recovery
from ding_lite.coordinator.marks import (
    MAX_COUNT,
    MAX_LINE,
    MAX_NUMBER,
    AddressMark,
    BatchMark,
    LineMark,
    Shape,
)
from ding_lite.coordinator.recovery import RecoveryError
from ding_lite.coordinator.state import (
    CollectorRecord,
    CoordinatorState,
    OneOf,
    PolicyPathMark,
    RunFolders,
    WorkerId,
    WorkerIdMark,
    hints,
)

FOLDERS = RunFolders(Path("/run/data"), Path("/run/policy"))
FILE_KEYS = {"format", "saved_at", "workers", "ledger"}  # the file's own, beside the record's
JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
NUMBERS = st.floats(-MAX_NUMBER, MAX_NUMBER, allow_nan=False)
COUNTS = st.integers(0, MAX_COUNT)
JSON_LEAF |= NUMBERS
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _marked(base: Any, marks: tuple[Any, ...]) -> st.SearchStrategy:
    """Values a check mark accepts (a new kind of mark needs its strategy here)."""
    (mark,) = marks
    if isinstance(mark, OneOf):
        return st.sampled_from(mark.choices)
    if isinstance(mark, WorkerIdMark):
        return st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True).filter(
            lambda s: s not in (".", "..")
        )
    if isinstance(mark, PolicyPathMark):
        names = st.integers(0, 10**8 - 1).map(lambda v: f"policy_v{v:08d}.pt")
        return st.just("") | names.map(lambda n: str(FOLDERS.path_policy / n))
    if isinstance(mark, AddressMark):
        ports = st.integers(0, 65535).map(lambda p: f"127.0.0.1:{p}")
        return st.just("") | ports if mark.empty else ports
    if isinstance(mark, LineMark):
        printable = st.characters(blacklist_categories=("Cc", "Cs"))
        return st.text(printable, max_size=MAX_LINE)
    if isinstance(mark, Shape):
        kinds = {"count": COUNTS, "number": NUMBERS, "number?": st.none() | NUMBERS}
        return st.fixed_dictionaries({key: kinds[kind] for key, kind in mark.keys})
    if isinstance(mark, BatchMark):
        seqs = st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 10**4))
        rollouts = seqs.map(
            lambda t: {
                "path": f"{FOLDERS.path_data}/c0/{t[0]:08d}_v{t[1]}_n{t[2]}.pt",
                "collector": "c0",
                "seq": t[0],
                "policy_version": t[1],
                "size": t[2],
            }
        )
        batch = {"files": st.lists(rollouts, max_size=3, unique_by=lambda m: m["seq"])}
        batch |= {"envstep": COUNTS, "batch": st.from_regex(r"[0-9a-f]{16}", fullmatch=True)}
        return st.fixed_dictionaries(batch)
    raise AssertionError(f"no strategy for the mark {mark!r} of {base!r}")


def values(hint: Any) -> st.SearchStrategy:
    """Any valid value of the field type ``hint``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return JSON
    if origin is Annotated:
        return _marked(args[0], args[1:])
    if origin in (typing.Union, types.UnionType):
        return st.one_of([st.none() if a is type(None) else values(a) for a in args])
    if dataclasses.is_dataclass(hint):
        return st.builds(hint, **{name: values(h) for name, h in hints(hint).items()})
    if isinstance(hint, type) and issubclass(hint, tuple):  # a named tuple
        return st.tuples(*map(values, hints(hint).values())).map(lambda t: hint(*t))
    if origin is list:
        return st.lists(values(args[0]), max_size=4)
    if origin is set:
        return st.sets(values(args[0]), max_size=4)
    if origin is dict:
        return st.dictionaries(values(args[0]), values(args[1]), max_size=3)
    if hint is dict:
        return st.dictionaries(st.text(max_size=6), JSON, max_size=3)
    scalars = {
        bool: st.booleans(),
        int: COUNTS,
        float: NUMBERS,
        str: st.text(max_size=12),
    }
    return scalars[hint]


def through_file(state: CoordinatorState) -> Any:
    """``state`` written as JSON text and read back, as a restarted coordinator reads it."""
    return type(state).from_json(json.loads(json.dumps(state.to_json())), FOLDERS)


@FAST
@given(values(CoordinatorState))
def test_every_field_of_the_state_round_trips_exactly(state):
    assert through_file(state) == state


def test_the_record_leaves_the_files_own_keys_alone():
    assert not FILE_KEYS & set(hints(CoordinatorState))


# Adding a field (to the record, or to a collector's record) is the record's change alone:
# no codec, recovery or test code names it.
GrownCollector = dataclasses.make_dataclass(
    "GrownCollector",
    [("restarts", int, dataclasses.field(default=0))],
    bases=(CollectorRecord,),
)
GrownState = dataclasses.make_dataclass(
    "GrownState",
    [
        ("notes", dict[WorkerId, list[float]], dataclasses.field(default_factory=dict)),
        ("collectors", dict[WorkerId, GrownCollector], dataclasses.field(default_factory=dict)),
        ("paused", bool, dataclasses.field(default=False)),
    ],
    bases=(CoordinatorState,),
)


def _agreeing(state: CoordinatorState) -> CoordinatorState:
    """``state`` with the fields that must agree with others (see ``recovery.read``) left
    at what agrees with anything (running, no evaluator, no addresses, no batch on its
    way, no evaluation), and those the file turns into the wall clock's and the run's at 0."""
    status = dataclasses.replace(state.status, eval_return=None, eval_policy_version=None)
    status.solved, status.first_learn_at = False, None  # (the file holds it on another clock)
    return dataclasses.replace(
        state,
        phase="running",
        evaluator=None,
        addresses={},
        inflight=None,
        status=status,
        cpu_s=0.0,  # (the file adds this process's CPU time)
    )


@FAST
@given(values(GrownState).map(_agreeing))
def test_a_field_added_to_the_record_is_saved_and_taken_back(state):
    assert through_file(state) == state
    saved = json.loads(json.dumps(recovery.snapshot(state, [], {"counts": {}})))
    back = recovery.read(saved, GrownState, FOLDERS).state
    grown = ("notes", "collectors", "paused")
    assert [getattr(back, n) for n in grown] == [getattr(state, n) for n in grown]


def test_the_file_holds_the_wall_clock_and_the_run_cpu_time():
    state = CoordinatorState(cpu_s=10.0)
    state.status.first_learn_at = time.perf_counter() - 5.0
    state.status.episode_returns = [float(i) for i in range(recovery.KEPT_VALUES + 5)]
    saved = recovery.snapshot(state, [], {})
    assert saved["format"] == recovery.FORMAT and saved["cpu_s"] >= 10.0
    assert abs(saved["status"]["first_learn_at"] - (time.time() - 5.0)) < 1.0
    assert saved["status"]["episode_returns"][0] == 5.0  # the latest KEPT_VALUES only
    back = recovery.read(json.loads(json.dumps(saved)), CoordinatorState, FOLDERS).state
    assert abs(back.status.first_learn_at - state.status.first_learn_at) < 1.0
    assert len(state.status.episode_returns) == recovery.KEPT_VALUES + 5  # left as it was


def _with(path: str, value: Any) -> dict[str, Any]:
    """A valid saved record with the value at dotted ``path`` replaced (or removed)."""
    saved = CoordinatorState(
        learner="learner0",
        collectors={"c0": CollectorRecord("running", 0, 10, 1)},
        evaluator="c0",
    ).to_json()
    *parents, last = path.split(".")
    inner = saved
    for key in parents:
        inner = inner[key]
    if value is _MISSING:
        del inner[last]
    else:
        inner[last] = value
    return saved


_MISSING = object()


@pytest.mark.parametrize(
    "path, value, says",
    [
        ("learner", "../x", "learner '../x' is not a worker id"),
        ("evaluator", 3, "field 'evaluator' has the wrong type int"),
        ("phase", "paused", "phase 'paused' must be one of running, closing, closed, finished"),
        ("collectors.c0.state", "zombie", "collectors.c0.state 'zombie' must be one of"),
        ("collectors.c0.index", -1, "field 'collectors.c0.index' must be a count"),
        ("collectors.c0.envsteps", True, "field 'collectors.c0.envsteps' must not be a bool"),
        ("collectors.c0.version", 1.5, "field 'collectors.c0.version' must be a count"),
        ("collectors", {"a/b": {}}, "collectors 'a/b' is not a worker id"),
        ("policy", ["/elsewhere/policy_v00000001.pt", 1, 0.0], "is not inside path_policy"),
        ("policy", ["", 1], "policy must be [path, version, published_at]"),
        ("started_at", math.nan, "field 'started_at' must be a finite number"),
        ("status.train_iter", "3", "field 'status.train_iter' must be a count"),
        ("status.recent_lags", [0.5, "x"], "field 'status.recent_lags[]' must be a finite"),
        ("bad_learners", "learner0@x", "field 'bad_learners' has the wrong type str"),
        ("status", _MISSING, "missing field 'status'"),
        ("collectors.c0.index", _MISSING, "missing field 'collectors.c0.index'"),
    ],
)
def test_a_damaged_value_is_refused_in_one_line_naming_its_field(path, value, says):
    with pytest.raises(RecoveryError) as refused:
        CoordinatorState.from_json(_with(path, value), FOLDERS)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("saved", [None, [], "state"])
def test_a_record_that_is_no_object_is_refused(saved):
    with pytest.raises(RecoveryError, match="has the wrong type"):
        CoordinatorState.from_json(saved, FOLDERS)
