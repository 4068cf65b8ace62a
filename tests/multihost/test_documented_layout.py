"""docs/parallel.rst's "Running on several machines", run across four test hosts as written.

The page's own commands are read from it: the coordinator on 10.0.0.1 (``--host 0.0.0.0``),
the learner on 10.0.0.2, a collector on 10.0.0.3 and, as "each collector's machine" says,
a second one on 10.0.0.4. The hosts have exactly those addresses, so only what a test
machine must change is changed: the run dir (``/shared/runs/...`` becomes a folder of the
test's, one filesystem shared by all hosts), the second collector's address and id, and
``--device cuda`` on a machine without a GPU.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DOCS, wait_for

SECTION = ("Running on several machines", "A learner of several ranks")
RUN_TIMEOUT_S = 240


def several_machine_commands() -> dict[str, list[str]]:
    """The section's ``ding-lite`` commands, continuation lines joined: role -> argv."""
    text = (DOCS / "parallel.rst").read_text(encoding="utf-8")
    start = text.index(f"{SECTION[0]}\n---")
    section = text[start : text.index(SECTION[1], start)]
    joined = re.sub(r"\\\n\s*", "", section)
    commands = {}
    for line in joined.splitlines():
        if line.strip().startswith("ding-lite "):
            words = shlex.split(line.strip(), comments=True)
            commands[words[1]] = words
    return commands


def _substituted(argv: list[str], run_dir: Path, **changes: str) -> list[str]:
    out = []
    for word in argv:
        word = re.sub(r"^/shared/runs/\S+", str(run_dir), word)
        out.append(changes.get(word, word))
    return out


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_the_page_shows_one_command_per_role():
    commands = several_machine_commands()
    assert set(commands) == {"coordinator", "learner", "collector"}, commands
    assert "0.0.0.0" in commands["coordinator"]
    assert "10.0.0.1:7235" in commands["learner"] and "10.0.0.1:7235" in commands["collector"]


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_four_hosts_solve_cartpole_with_the_documented_commands(hosts, tmp_path):
    net = hosts("coordinator", "learner", "collector", "collector2")
    run_dir = tmp_path / "runs" / "cartpole_1"
    token = {"DING_LITE_TOKEN": "multihost-test-token-7c1e"}
    commands = several_machine_commands()
    ding_lite = [sys.executable, "-m", "ding_lite"]
    device = {} if _cuda() else {"cuda": "cpu"}
    collector = _substituted(commands["collector"], run_dir, **device)
    second = _substituted(
        collector, run_dir, **{"10.0.0.3": "10.0.0.4", "collector-gpu-a": "collector-gpu-b"}
    )
    argv = {
        "coordinator": _substituted(commands["coordinator"], run_dir),
        "learner": _substituted(commands["learner"], run_dir),
        "collector": collector,
        "collector2": second,
    }
    logs = {}
    procs = {}
    env = {**os.environ, **token}
    for host, words in argv.items():
        logs[host] = open(tmp_path / f"{host}.out", "w")  # noqa: SIM115 (closed below)
        procs[host] = net.start(
            host, [*ding_lite, *words[1:]], stdout=logs[host], stderr=subprocess.STDOUT,
            env=env, cwd=tmp_path,
        )  # fmt: skip
        if host == "coordinator":  # the workers keep trying for 10 s only
            printed = wait_for(lambda: "coordinator at" in _out(tmp_path, "coordinator"), 60)
            assert printed, _out(tmp_path, "coordinator")
    try:
        code = procs["coordinator"].wait(timeout=RUN_TIMEOUT_S)
        worker_codes = {h: p.wait(timeout=30) for h, p in procs.items() if h != "coordinator"}
    finally:
        for log in logs.values():
            log.close()
    report = "\n".join(f"--- {h}\n{_out(tmp_path, h)[-3000:]}" for h in argv)
    assert code == 0, report
    # Bound to 0.0.0.0, it prints an address the other hosts can dial: its own.
    assert "coordinator at 10.0.0.1:7235; waiting for workers" in _out(tmp_path, "coordinator")
    assert worker_codes == {"learner": 0, "collector": 0, "collector2": 0}, report
    result = json.loads((run_dir / "result.json").read_text())
    assert result["solved"] and result["stop_reason"] == "solved", result
    ledger = result["ledger"]
    dropped = sum(v for k, v in ledger.items() if k.startswith("dropped_"))
    assert ledger["written"] == ledger["trained"] + dropped and ledger["left_in_path_data"] == 0
    # Each worker registered the address of its own host (the coordinator's record of them).
    state = json.loads((run_dir / "coordinator_state.json").read_text())
    assert state["addresses"] == {
        "learner-a": "10.0.0.2:7236",
        "collector-gpu-a": "10.0.0.3:7236",
        "collector-gpu-b": "10.0.0.4:7236",
    }, state["addresses"]
    # Nothing is left running on any host.
    assert all(not net.pids(h) for h in argv), {h: net.pids(h) for h in argv}


def _out(tmp_path: Path, host: str) -> str:
    path = tmp_path / f"{host}.out"
    return path.read_text(errors="replace") if path.exists() else ""
