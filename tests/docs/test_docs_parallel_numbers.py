"""The numbers, defaults and messages docs/parallel.rst states, each derived from the constant
or the code that sets it, so the page and the code cannot drift apart."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest
from helpers import DOCS, TOKEN, folded_page

import ding_lite
from ding_lite.config import compile_config
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.coordinator import RunStatus
from ding_lite.coordinator.collectors import (
    COLLECTOR_SEED_STRIDE,
    IDLE_POLL_PER_COLLECTOR_S,
    IDLE_POLL_S,
    MAX_DATA_FAILURES,
)
from ding_lite.coordinator.coordinator import ADOPT_AFTER_S, SCAN_INTERVAL_S
from ding_lite.coordinator.learner_side import MAX_LEARNER_FAILURES
from ding_lite.coordinator.ledger import LEDGER_KEYS
from ding_lite.coordinator.watchdog import STALL_FACTOR, Backoff, QuietLog
from ding_lite.entry.cli import arguments, command
from ding_lite.entry.launch import local as launcher
from ding_lite.entry.pipelines import parallel
from ding_lite.entry.reporting import run_report
from ding_lite.entry.run.dir_lock import lock_run_dir
from ding_lite.interaction import HttpClient, server
from ding_lite.interaction.client import DEFAULT_TIMEOUT
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector.comm.flask_fs_collector import EVAL_SEED_OFFSET

PAGE = "parallel.rst"
PARALLEL_EXPERIMENTS = ("cartpole_ppo_parallel", "pendulum_ppo_parallel", "aircombat_ppo_parallel")
EVERY = {1.0: "once a second"}  # how the page words an interval
# Messages the page quotes -> the fixed parts of the code's message (its <id>s filled in).
QUOTED_MESSAGES = {
    "``collector <id> dropped, it cannot start``": ["dropped, it cannot start"],
    "``rollouts from collector0, collector1 (<have>/<need> samples)``": [
        "rollouts from ",
        " samples)",
    ],
    "``stopping: worker id '<id>' is in use by a live ...``": ["stopping: ", "is in use by a live"],
}


def missing(phrases: list[str]) -> list[str]:
    text = folded_page(PAGE)
    return [phrase for phrase in phrases if phrase not in text]


def seconds(values: tuple[float, ...]) -> str:
    """``0.5, 1, 2, 4 and then 8``."""
    return ", ".join(f"{v:g}" for v in values[:-1]) + f" and then {values[-1]:g}"


def test_numbers_the_page_states():
    retry = HttpClient("127.0.0.1:9", TOKEN)._session.get_adapter("http://x").max_retries
    waits = []
    for _ in range(retry.total):
        retry = retry.increment(method="POST", url="/")
        waits.append(f"{retry.get_backoff_time():g}")
    backoff = Backoff()
    delays = [backoff.failed("c0") for _ in range(9)]
    assert delays[1] == 2 * delays[0] and max(delays) == delays[-1]  # doubling, then capped
    http = inspect.signature(server.HttpServer).parameters
    bundled = {
        compile_config(name).learner.hook.save_ckpt_after_iter for name in PARALLEL_EXPERIMENTS
    }
    assert len(bundled) == 1
    default_ckpt = DEFAULT_CONFIG["learner"]["hook"]["save_ckpt_after_iter"]
    assert not default_ckpt  # "off"
    assert not missing(
        [
            f"gets ``seed + {COLLECTOR_SEED_STRIDE} * i``",
            f"``seed + {EVAL_SEED_OFFSET}``",
            # The launcher waits half of CHILD_STOP_S, then SIGTERM, the other half, SIGKILL.
            f"worker processes {launcher.CHILD_STOP_S / 2:g} s to exit on their own",
            f"is tried {len(waits)} more times (after {', '.join(waits[:-1])} and {waits[-1]} s)",
            f"starts after {seconds(launcher.RESTART_BACKOFF_S)} s",
            f"{STALL_FACTOR} x the slowest iteration so far",
            f"after {MAX_DATA_FAILURES} failures in a row",
            f"failed {MAX_LEARNER_FAILURES} tasks in a row",
            f"{EVERY[SCAN_INTERVAL_S]}, scan ``path_data``",
            f"at least {ADOPT_AFTER_S:g} s old",
            f"``max({IDLE_POLL_S * 1000:g} ms, {IDLE_POLL_PER_COLLECTOR_S * 1000:g} ms x"
            " collectors)``",
            f"from {delays[0]:g} s, doubling up to {max(delays):g} s",
            f"at most {EVERY[QuietLog(None).interval]}",
            f"at most {server.CONNECTION_LIMIT:,} open connections",
            f"at most {server.OPEN_FILES_TARGET:,}",
            f"idle or half-sent for {http['channel_timeout'].default:g} s",
            f"a fixed pool of {http['threads'].default} threads",
            f"({bundled.pop()} in the bundled ``*_parallel`` experiments, {default_ckpt}, off, in"
            " the defaults)",
            f"{DEFAULT_TIMEOUT[0]:g} s to connect",
            f"keep the client's default of {DEFAULT_TIMEOUT[1]:g} s",
        ]
    )


def test_defaults_the_page_states():
    system = DEFAULT_CONFIG["system"]
    lag = {compile_config(name).system.max_policy_lag for name in PARALLEL_EXPERIMENTS[:2]}
    assert len(lag) == 1
    assert system["max_body_bytes"] % (1 << 20) == 0
    skipped = DEFAULT_CONFIG["policy"]["learn"]["max_skipped_steps"]
    assert not missing(
        [
            f"``system.max_pending_files`` of its files ({system['max_pending_files']} by",
            f"``system.max_policy_lag`` ({system['max_policy_lag']} by default, {lag.pop()} in",
            f"``system.keep_policies`` versions ({system['keep_policies']} by default)",
            f"``system.task_timeout`` ({system['task_timeout']:g} s)",
            f"``system.http_timeout`` ({system['http_timeout']:g} s)",
            f"({system['heartbeat_tolerance']:g} by default;",
            f"({system['max_body_bytes'] >> 20} MiB by default)",
            f"``system.stall_timeout`` is {system['stall_timeout']:g} s by default",
            f"``system.max_restarts`` restarts ({system['max_restarts']} by default)",
            f"``system.join_timeout`` ({system['join_timeout']:g} s by default",
            f"``2 x system.heartbeat_tolerance`` ({2 * system['heartbeat_tolerance']:g} s by"
            " default)",
            f"``policy.learn.max_skipped_steps`` ({skipped})",
            # Which tasks get the short timeout (tests/coordinator checks the coordinator).
            f"``system.http_timeout`` ({system['http_timeout']:g} s) for"
            " ``learner_get_data_task``, data and policy sync",
        ]
    )


def test_worker_options_the_page_states():
    args = arguments.build_parser().parse_args(["collector", "--coordinator", "127.0.0.1:1"])
    assert args.worker_id.startswith("collector-")  # <role>-<hostname>-<pid>
    assert not missing(
        [
            "The default, ``<role>-<hostname>-<pid>``",
            f"``--master-timeout`` seconds ({args.master_timeout:g} by default)",
            f"``--master-timeout`` (seconds, {args.master_timeout:g} by default",
            f"``--heartbeat-period`` (seconds, {args.heartbeat_period:g} by default)",
        ]
    )


def test_messages_the_page_quotes_are_the_codes():
    code = "\n".join(
        path.read_text(encoding="utf-8") for path in (Path(ding_lite.__file__).parent).rglob("*.py")
    )
    assert not missing(list(QUOTED_MESSAGES))
    for quote, parts in QUOTED_MESSAGES.items():
        assert all(part in code for part in parts), quote


def test_coordinator_needs_a_config_or_resume(capsys):
    code = command.main(["coordinator"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert not missing([f"``{err}``"])


def test_a_second_run_on_a_dir_is_refused_naming_the_holder(tmp_path):
    with lock_run_dir(tmp_path / "run"):
        with pytest.raises(ConfigError) as refused:
            lock_run_dir(tmp_path / "run")
    message = str(refused.value).replace(str(tmp_path / "run"), "<exp_dir>")
    message = message.replace(f"pid {os.getpid()}", "pid <pid>")
    assert not missing([f"``ding-lite: error: {message}``"])


def test_summary_prints_the_ledger_as_the_page_shows():
    status = RunStatus(stop_reason="stalled", stop_detail="no iteration for 300 s", restarts=2)
    status.ledger = {**dict.fromkeys(LEDGER_KEYS, 0), "left_in_path_data": 0}
    cfg = compile_config("cartpole_ppo_parallel")
    lines = run_report.summary(run_report.run_result(cfg, status, 1.0)).splitlines()
    assert lines[0].startswith("not solved (stalled): ") and lines[0].endswith(", 2 restart(s)")
    assert lines[1] == "stopped: no iteration for 300 s"
    shown = re.sub(r"\b0\b", "<N>", lines[2])
    assert f"    {shown}\n" in (DOCS / PAGE).read_text(encoding="utf-8")


def test_parallel_pipeline_is_exported():
    assert ding_lite.parallel_pipeline is parallel.parallel_pipeline
    assert "parallel_pipeline" in ding_lite.__all__
    assert "    from ding_lite import parallel_pipeline\n" in (DOCS / PAGE).read_text()
