"""Nothing in the coordinator's recovery file is trusted (issue 40), on real files.

A real run (a learner and two collectors whose handlers are called in this process, their
rollout and policy files real) is stopped after a few iterations, as a killed coordinator
leaves it; its ``coordinator_state.json`` is then damaged, value by value and by
hypothesis, and handed to a fresh coordinator. Each mutant is refused whole (one line,
nothing of the coordinator changed) or taken whole, and a coordinator that took it can
save, report and write its status again without a crash.
"""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import json_paths, tiny_cfg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scripted import ScriptedTransport, make_workers
from test_coordinator_recovery import Killed, RestorableTransport

from ding_lite.coordinator import Coordinator
from ding_lite.coordinator.recovery import RECOVERY_FILE, RecoveryError, RecoveryFile
from ding_lite.coordinator.state import COLLECTOR_STATES, FAILED
from ding_lite.entry.reporting.run_report import TbStatus, run_result
from ding_lite.entry.run.result import summary


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """The run dir and the recovery file of a run whose coordinator died at iteration 3
    (a batch on its way: its last save was of the batch handed to the learner)."""
    root = tmp_path_factory.mktemp("trusted")
    workers = make_workers(2)
    transport = RestorableTransport.of_workers(root, workers)
    first = Coordinator(tiny_cfg(root), transport, recovery=RecoveryFile(root))

    def die(status):
        if status.train_iter == 3:
            while not first.rollouts.live()["waiting"]:
                first.collectors.poll()
                time.sleep(0.01)
            first.learner_link._next_batch()  # handed and saved, the answer never came
            raise Killed

    first.on_status = die
    first._close = lambda: None
    with pytest.raises(Killed):
        first.run(10)
    for _, worker in workers.values():
        worker.close()
    return root, json.loads((root / RECOVERY_FILE).read_text())


def _fresh(root: Path) -> Coordinator:
    return Coordinator(tiny_cfg(root), RestorableTransport(root, learners=()))


def _taken(coordinator: Coordinator, saved: dict[str, Any]) -> bool:
    """Restores ``saved``: True when taken, False when refused (checked: in one line, with
    nothing of the coordinator changed)."""
    before = (coordinator.state.to_json(), coordinator.rollouts.state())
    try:
        coordinator.restore(saved)
    except RecoveryError as err:
        assert "\n" not in str(err) and len(str(err)) < 400, str(err)
        assert (coordinator.state.to_json(), coordinator.rollouts.state()) == before
        assert not coordinator.restored and not hasattr(coordinator.transport, "restored")
        return False
    return True


def _goes_on(coordinator: Coordinator, root: Path) -> None:
    """What a coordinator does with what it took: saves it, writes the status to
    tensorboard, builds and prints the result."""
    coordinator.recovery = RecoveryFile(root / "again")
    (root / "again").mkdir(exist_ok=True)
    coordinator.save("periodic")
    tb = TbStatus(root / "again" / "tb", coordinator.status)
    try:
        tb(coordinator.status)
        tb.final(coordinator.status)
    finally:
        tb.close()
    result = run_result(coordinator.cfg, coordinator.status, 1.0, 1.0)
    json.dumps(result, allow_nan=False)
    summary(result)


def test_the_real_file_is_taken_and_goes_on(saved_run):
    root, saved = saved_run
    assert saved["inflight"] is not None and saved["ledger"]["handed"]
    coordinator = _fresh(root)
    assert _taken(coordinator, copy.deepcopy(saved))
    _goes_on(coordinator, root)


def _set(path: str, value: Any):
    def edit(saved: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        inner = saved
        for key in parents:
            inner = inner[int(key)] if isinstance(inner, list) else inner[key]
        inner[int(last) if isinstance(inner, list) else last] = value

    return edit


def _solved_unevaluated(saved: dict[str, Any]) -> None:
    saved["status"].update(solved=True, eval_return=None, eval_policy_version=None)


@pytest.mark.parametrize(
    "edit, says",
    [
        # finding 1: out of range
        (_set("envstep_base", 10**30), "field 'envstep_base' must be a count"),
        (_set("policy.1", 10**30), "field 'policy.version' must be a count"),
        (_set("batch_size", 10**30), "field 'batch_size' must be a count"),
        (_set("status.eval_seconds", 1e300), "must be a finite number"),
        # finding 3: a late field wrong, nothing of the earlier ones taken
        (_set("batch_size", "2048"), "field 'batch_size' must be a count"),
        # finding 4: sections nothing checked
        (_set("status.envstep", "lots"), "field 'status.envstep' must be a count"),
        (_set("status.train_iter", [1]), "field 'status.train_iter' must be a count"),
        (_solved_unevaluated, "solved with no evaluation"),
        (_set("status.stop_reason", "<b>x</b>"), "status.stop_reason '<b>x</b>' must be one of"),
        (_set("status.stop_detail", "\x1b[2Jgone"), "is not one printable line"),
        (_set("inflight.files", ["/etc/passwd"]), "inflight"),
        (_set("inflight.files.0.path", "/etc/passwd"), "inflight"),
        (_set("addresses.learner0", "10.9.9.9:1"), "registered elsewhere"),
        (_set("addresses.ghost", "127.0.0.1:1"), "'ghost' is no worker the run started"),
        (_set("status.best_eval", {"policy_version": 1}), "status.best_eval"),
        (_set("evaluator", "collector7"), "evaluator 'collector7' is not a collector"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_damaged_file_is_refused_whole_in_one_line(saved_run, edit, says):
    root, saved = saved_run
    damaged = copy.deepcopy(saved)
    edit(damaged)
    coordinator = _fresh(root)
    assert not _taken(coordinator, damaged)
    with pytest.raises(RecoveryError, match=None) as refused:
        coordinator.restore(damaged)
    assert says in str(refused.value), str(refused.value)


def test_solved_under_the_stop_value_is_refused(saved_run):
    root, saved = saved_run
    damaged = copy.deepcopy(saved)
    damaged["status"].update(solved=True, eval_return=1.0, eval_policy_version=2)
    coordinator = Coordinator(
        tiny_cfg(root, "evaluator.stop_value=100"), RestorableTransport(root, learners=())
    )
    assert not _taken(coordinator, damaged)


# --- acceptance 2: any mutant of the real file ---------------------------------------------
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["/etc/passwd", "../x", "\x1b[31m", "1" * 300, *COLLECTOR_STATES])
)
ANY = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def mutants(draw, saved: dict[str, Any]) -> dict[str, Any]:
    """``saved`` with 1 to 3 changes: a value replaced, a key removed, a key added."""
    mutant = copy.deepcopy(saved)
    for _ in range(draw(st.integers(1, 3))):
        places = json_paths(mutant)
        where = draw(st.sampled_from(places))
        parent = mutant
        for key in where[:-1]:
            parent = parent[key]
        how = draw(st.sampled_from(["replace", "remove", "add"]))
        if how == "replace":
            parent[where[-1]] = draw(ANY)
        elif how == "remove" and isinstance(parent, dict):
            del parent[where[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(ANY)
    return mutant


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_mutant_of_a_real_file_is_refused_or_taken_whole(saved_run, data):
    root, saved = saved_run
    mutant = data.draw(mutants(saved))
    coordinator = _fresh(root)
    if _taken(coordinator, mutant):
        _goes_on(coordinator, root)


def test_a_collector_lost_on_record_but_running_is_closed_at_the_end(tmp_path):
    """Finding 6: a collector the record says failed (lost, replaced) but whose process
    came back and collects on is closed with the run, so nothing is written after the
    result and every file it wrote is in the ledger."""
    workers = make_workers(2)
    transport = ScriptedTransport.of_workers(tmp_path, workers)
    coordinator = Coordinator(tiny_cfg(tmp_path, max_train_iter=4), transport)

    def forget(status):
        if status.train_iter == 3:
            coordinator.state.collectors["collector1"].state = FAILED

    coordinator.on_status = forget
    status = coordinator.run(10)
    late = workers["collector1"][1]
    assert late.closed.is_set(), [c.name for c in transport.calls if c.worker == "collector1"]
    files = sum(w._async.files_written for r, w in workers.values() if r == "collector")
    assert status.ledger["written"] == files
    on_disk = sorted((tmp_path / "data").glob("*/*.pt"))
    assert status.ledger["left_in_path_data"] == len(on_disk) == 0
    for _, worker in workers.values():
        worker.close()
    assert not math.isnan(status.envstep)
