"""docs/parallel.rst's tables against the code: routes, envelope codes, tasks and their result
fields, result.json keys, stop reasons, the ledger and the fault table. Nothing here runs a
parallel run; the behaviour the page describes is tested beside the code (tests/coordinator,
tests/interaction, tests/entry)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import torch
from helpers import TINY, folded, folded_page, list_table_rows, marked_region

from ding_lite.config import compile_config
from ding_lite.coordinator import RunStatus
from ding_lite.coordinator.ledger import LEDGER_KEYS, OUTCOMES, RolloutLedger
from ding_lite.data.files import write_rollout
from ding_lite.entry.reporting import run_report
from ding_lite.interaction import Code, protocol
from ding_lite.utils import stop
from ding_lite.utils.paths import rollout_name
from ding_lite.worker.collector.comm import AsyncCollector, FlaskFileSystemCollector
from ding_lite.worker.learner.comm import FlaskFileSystemLearner
from ding_lite.worker.learner.comm.intake import LEARN_OUTCOMES, Intake

PAGE = "parallel.rst"


def region(name: str) -> str:
    return marked_region(PAGE, name)


def task_entry(name: str) -> str:
    """The definition of task ``name`` in the 'tasks' region, line breaks folded."""
    parts = re.split(r"^``([a-z_]+_task)``$", region("tasks"), flags=re.M)
    entries = dict(zip(parts[1::2], parts[2::2], strict=True))
    return folded(entries[name])


def documented_routes() -> dict[str, dict[str, str]]:
    """``{route: {field: type name}}`` from the list-table between the 'routes' markers."""
    routes = {}
    for cells in list_table_rows(PAGE, "routes"):
        route = re.fullmatch(r"``(/[a-z_/]+)``", cells[0].strip()).group(1)
        routes[route] = dict(re.findall(r"``(\w+)`` \((\w+)\)", cells[2]))
    return routes


def test_route_table_matches_protocol():
    schemas = {
        protocol.MASTER_REGISTER: protocol.REGISTER_SCHEMA,
        protocol.MASTER_HEARTBEAT: protocol.HEARTBEAT_SCHEMA,
        protocol.MASTER_TASK_RESULT: protocol.TASK_RESULT_SCHEMA,
        protocol.MASTER_DEREGISTER: protocol.DEREGISTER_SCHEMA,
        protocol.SLAVE_TASK: protocol.TASK_SCHEMA,
        protocol.SLAVE_PING: protocol.PING_SCHEMA,
    }
    expected = {
        route: {field: t.__name__ for field, t in schema.items()}
        for route, schema in schemas.items()
    }
    assert documented_routes() == expected
    # The register row's refusals: an id outside the rule (its length from the code's rule).
    register_row = folded(list_table_rows(PAGE, "routes")[0][3])
    length = re.match(r"\d+-\d+", protocol.WORKER_ID_RULE).group()
    assert f"not {length} of ``A-Z a-z 0-9 . _ -`` or is ``.`` or ``..``" in register_row


def test_code_table_matches_envelope_codes():
    rows = re.findall(r"^``(\d+)``\s+(\d{3}|\(none\))\s", region("codes"), flags=re.M)
    documented = {int(code): status for code, status in rows}
    assert set(documented) == {int(c) for c in Code}
    for code, status in documented.items():
        if code < 5020:
            assert int(status) == Code(code).http_status


def test_documented_tasks_are_the_handlers():
    names = set(re.findall(r"^``([a-z_]+_task)``$", region("tasks"), flags=re.M))
    learner = FlaskFileSystemLearner().handlers
    collector = FlaskFileSystemCollector().handlers
    assert names == set(learner) | set(collector)


def test_learner_task_entries_name_every_result_field(tmp_path):
    """Each field of the learner's start, get_data, close and learn results is named in its
    task's entry (the values are tested in tests/worker/learner/comm)."""
    cfg = compile_config(
        "cartpole_ppo_parallel", TINY, exp_dir=str(tmp_path), seed=0, max_train_iter=1
    )
    cfg.system.path_policy = str(tmp_path / "policy")
    cfg.system.path_data = str(tmp_path / "data")
    learner = FlaskFileSystemLearner()
    results = {"learner_start_task": learner.start_task({"config": dict(cfg)})}
    try:
        results["learner_get_data_task"] = learner.get_data_task({})
    finally:
        results["learner_close_task"] = learner.close_task({"discard": []})
    learner = FlaskFileSystemLearner()  # the learn info, of a learner that never started
    learner.cfg = SimpleNamespace(max_env_step=100, max_train_iter=5)
    learner._learner = SimpleNamespace(envstep=0, train_iter=0, learn_info={}, stop_reason=None)
    intake = Intake()
    intake.lags.append(1)
    results["learner_learn_task"] = learner._info(intake)
    for task, result in results.items():
        entry = task_entry(task)
        missing = [key for key in result if f"``{key}``" not in entry]
        assert not missing, f"{task}: the page names no {missing}"


def test_data_task_fields_and_file_metadata(tmp_path):
    data_task = task_entry("collector_data_task")
    loop = AsyncCollector(SimpleNamespace(envstep=0), None, name="c0", path_data=tmp_path)
    for key in loop.drain():
        assert f"``{key}``" in data_task, f"collector_data_task result field {key} missing"

    meta = write_rollout(tmp_path, "c0", 7, {"obs": torch.zeros(3, 2)}, policy_version=1)
    assert meta["path"] == str(tmp_path / "c0" / "00000007_v1_n3.pt")
    text = folded_page(PAGE)
    sentence = text.split("The metadata of one rollout file", 1)[1].split("An evaluation", 1)[0]
    assert set(re.findall(r"``(\w+)``", sentence)) == set(meta)
    assert "``<path_data>/<collector id>/<seq>_v<version>_n<samples>.pt``" in text
    for example in ("00000000_v0_n512.pt", "00000001_v0_n512.pt"):
        seq = int(example[:8])
        assert example == rollout_name(seq, 0, 512) and f"{example}``" in text


def test_result_json_table_lists_every_key():
    cfg = compile_config("cartpole_ppo_parallel")
    result = run_report.run_result(cfg, RunStatus(), 1.0)
    documented = re.findall(r"^``([a-z_0-9]+)``\s", region("result-keys"), flags=re.M)
    assert sorted(documented) == sorted(result)


def test_stop_reason_table_matches_exit_codes():
    rows = re.findall(r"^``([a-z_]+)``\s+(\d+(?: / \d+)?)\s", region("stop-reasons"), flags=re.M)
    assert [reason for reason, _ in rows] == list(stop.STOP_REASONS)
    for reason, codes in rows:
        if reason == stop.INTERRUPTED:
            assert (
                codes == f"{stop.exit_code(reason, 'SIGINT')} / {stop.exit_code(reason, 'SIGTERM')}"
            )
        else:
            assert int(codes) == stop.exit_code(reason)
    keys = folded(region("result-keys"))
    for reason in stop.STOP_REASONS:
        assert f'``"{reason}"``' in keys


def test_ledger_keys_and_outcomes_the_page_lists(tmp_path):
    terms = re.findall(r"^``([a-z_]+)``$", region("ledger"), flags=re.M)
    assert terms == list(RolloutLedger(tmp_path).ledger()) == [*LEDGER_KEYS, "left_in_path_data"]
    assert OUTCOMES == (*LEARN_OUTCOMES, "dropped_run_end")
    equation = "``written = " + " + ".join(OUTCOMES) + "``"
    assert equation in folded_page(PAGE)
    learn = task_entry("learner_learn_task")
    for outcome in LEARN_OUTCOMES:
        assert f"``{outcome}``" in learn


def test_fault_table_answers_every_row_of_the_issue():
    rows = list_table_rows(PAGE, "faults")
    assert len(rows) == 15 + 5  # the fault matrices of issues 12 and 25, one row per fault
    for cells in rows:
        assert len(cells) == 2 and cells[1].strip(), cells
    for reason in re.findall(r'``"([a-z_]+)"``', region("faults")):
        assert reason in stop.STOP_REASONS
