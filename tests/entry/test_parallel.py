"""The parallel pipeline with real processes on 127.0.0.1."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import port_is_free, processes_with, wait_for

from ding_lite.utils.log import read_tb_scalars

FAST = [
    "system.heartbeat_period=0.2",
    "system.heartbeat_tolerance=2.0",
    "system.task_timeout=30",
]


def launch(tmp_path, *args):
    log = open(tmp_path / "launcher.out", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "parallel", "--exp-dir", str(tmp_path / "run"), *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log.close()
    return proc


def launcher_output(tmp_path):
    return (tmp_path / "launcher.out").read_text()


def coordinator_address(tmp_path, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(r"coordinator at (\S+);", launcher_output(tmp_path))
        if m:
            return m.group(1)
        time.sleep(0.1)
    raise AssertionError(f"launcher printed no address:\n{launcher_output(tmp_path)}")


def assert_all_gone(address):
    assert wait_for(lambda: not processes_with(f"--coordinator {address}"), 5)
    assert port_is_free(address)


def finished_run(tmp_path, *args, timeout=150):
    """Launches ``ding-lite parallel *args``, waits for a clean exit and for every process
    and port of the run to be gone; returns ``(result.json's content, the run dir)``."""
    proc = launch(tmp_path, *args)
    address = coordinator_address(tmp_path)
    assert proc.wait(timeout=timeout) == 0, launcher_output(tmp_path)
    assert_all_gone(address)
    run = tmp_path / "run"
    return json.loads((run / "result.json").read_text()), run


def _with_torch_loaded(pids, seen):
    """Adds to ``seen`` each of ``pids`` whose process has torch's library mapped."""
    for pid in pids:
        try:
            if "libtorch" in Path(f"/proc/{pid}/maps").read_text():
                seen.add(pid)
        except OSError:
            pass  # ended meanwhile


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_run_completes_cleans_up_and_leaves_nothing_running(tmp_path):
    proc = launch(
        tmp_path,
        "-c",
        "cartpole_ppo_parallel",
        "--max-train-iter",
        "4",
        "evaluator.eval_freq=2",
        "evaluator.before_train=true",
        *FAST,
    )
    address = coordinator_address(tmp_path)
    # The coordinator only speaks HTTP and reads files: torch (~2 s of CPU at every start,
    # every restart) is never loaded in it, from start to end.
    torch_free = set(processes_with(f"coordinator --resume {tmp_path / 'run'} "))
    assert len(torch_free) == 1
    with_torch: set[int] = set()
    deadline = time.monotonic() + 150
    while proc.poll() is None and time.monotonic() < deadline:
        _with_torch_loaded(torch_free, with_torch)
        time.sleep(0.1)
    assert proc.wait(timeout=5) == 0, launcher_output(tmp_path)
    assert not with_torch, "torch loaded in the coordinator"
    run = tmp_path / "run"
    result = json.loads((run / "result.json").read_text())
    assert result["train_iter"] == 4 and result["stop_reason"] == "max_train_iter"
    assert result["failed_tasks"] == 0 and result["eval_return_mean"] is not None
    assert result["best_checkpoint"] == "ckpt/best.pt" and (run / "ckpt" / "best.pt").is_file()
    assert result["best_eval_return"] >= result["eval_return_mean"]
    # evaluator.before_train: the policy the collectors start with is evaluated too.
    assert result["eval_before_train"]["return_mean"] > 0
    assert "eval of policy v0:" in (run / "logs" / "coordinator.log").read_text()
    assert not [p for p in (run / "data").rglob("*") if p.is_file()]
    assert (run / "ckpt").is_dir() and list((run / "policy").glob("policy_v*.pt"))
    (events,) = (run / "tb" / "coordinator").glob("events.out.tfevents.*")
    assert {"charts/episodic_return", "charts/SPS", "perf/eval_s"} <= set(read_tb_scalars(events))
    # The learner's phases and batch figures (the advantage step runs on the learner).
    (events,) = (run / "tb" / "learner0").glob("events.out.tfevents.*")
    learner_tags = set(read_tb_scalars(events))
    assert {"perf/advantage_s", "perf/update_s", "perf/publish_s"} <= learner_tags
    data_tags = {"data/reward_mean", "data/reward_std", "data/advantage_mean", "data/advantage_std"}
    assert data_tags <= learner_tags
    assert {p.name for p in (run / "logs").iterdir()} >= {
        "coordinator.log",
        "learner0.log",
        "collector0.log",
        "collector1.log",
    }
    assert_all_gone(address)

    assert result["ledger"]["left_in_path_data"] == 0 and result["restarts"] == 0
    ledger = result["ledger"]
    assert ledger["written"] == sum(
        v for k, v in ledger.items() if k.startswith(("trained", "dropped"))
    )

    # Resume: the learner goes on from its checkpoint; a rollout file left in data/ is
    # adopted and accounted for in the ledger.
    leftover = run / "data" / "collector0" / "00000099_v3_n256.pt"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"torn")
    (tmp_path / "first_result.json").write_text(json.dumps(result))
    proc = launch(tmp_path, "--resume", str(run), "--max-train-iter", "6", *FAST)
    address = coordinator_address(tmp_path)
    assert proc.wait(timeout=150) == 0, launcher_output(tmp_path)
    resumed = json.loads((run / "result.json").read_text())
    assert resumed["train_iter"] == 6 and resumed["policy_version"] == 6
    assert resumed["envstep"] > result["envstep"]
    assert not [p for p in (run / "data").rglob("*") if p.is_file()]
    assert "ckpt_iter00000004" in (run / "logs" / "learner0.log").read_text()
    ledger = resumed["ledger"]  # the leftover was adopted and is accounted for
    assert ledger["left_in_path_data"] == 0 and not leftover.exists()
    assert ledger["written"] == sum(
        v for k, v in ledger.items() if k.startswith(("trained", "dropped"))
    )
    assert ledger["written"] > ledger["trained"]
    assert_all_gone(address)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_sigkill_of_a_collector_mid_run(tmp_path):
    """The coordinator notices within its tolerance; the other collector solves CartPole."""
    proc = launch(tmp_path, "-c", "cartpole_ppo_parallel", "--seed", "0", *FAST)
    address = coordinator_address(tmp_path)
    # This run's: processes_with looks among this test's descendants only, so another
    # run's collector1 (tests side by side) is never the one killed.
    collector1 = f"--coordinator {address} --worker-id collector1 "
    assert wait_for(lambda: processes_with(collector1), 60)
    log = tmp_path / "run" / "logs" / "coordinator.log"
    # Kill it while it is busy: after the learner has trained a few iterations.
    assert wait_for(lambda: len(list((tmp_path / "run" / "policy").glob("*.pt"))) >= 2, 60)
    (victim,) = processes_with(collector1)
    os.kill(victim, signal.SIGKILL)
    killed_at = time.time()
    assert proc.wait(timeout=200) == 0, launcher_output(tmp_path)
    text = log.read_text()
    m = re.search(r"^(\S+ \S+) WARNING .*collector collector1 lost", text, flags=re.M)
    assert m, text[-3000:]
    noticed = time.mktime(time.strptime(m.group(1).split(",")[0], "%Y-%m-%d %H:%M:%S"))
    assert noticed - killed_at <= 2.0 + 2.0  # tolerance + one monitor period + log rounding
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["solved"] and result["eval_return_mean"] >= 475
    # no reader ever saw a partial file: no rollout or policy file failed to load
    learner_log = (tmp_path / "run" / "logs" / "learner0.log").read_text()
    assert "cannot read" not in learner_log and "not a ding_lite" not in learner_log
    assert "cannot read" not in text
    assert not [p for p in (tmp_path / "run" / "data").rglob("*") if p.is_file()]
    assert_all_gone(address)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigterm_stops_every_process_within_10_s(tmp_path):
    proc = launch(
        tmp_path,
        "-c",
        "cartpole_ppo_parallel",
        "evaluator.stop_value=none",
        "max_env_step=100000000",
        *FAST,
    )
    address = coordinator_address(tmp_path)
    run = tmp_path / "run"
    assert wait_for(lambda: len(list((run / "policy").glob("*.pt"))) >= 2, 60)
    proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    proc.wait(timeout=15)
    assert time.monotonic() - start < 10.0
    assert_all_gone(address)
    assert list((run / "ckpt").glob("ckpt_iter*.pt"))  # the learner left a checkpoint
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "interrupted"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_per_role_commands_join_a_coordinator(tmp_path):
    """The several-machines flow, on one machine: each role started by its own command."""
    env = dict(os.environ, DING_LITE_TOKEN="per-role-test-token")
    base = [sys.executable, "-m", "ding_lite"]
    out = open(tmp_path / "coordinator.out", "w")  # noqa: SIM115
    coordinator = subprocess.Popen(
        [
            *base,
            "coordinator",
            "-c",
            "cartpole_ppo_parallel",
            "--exp-dir",
            str(tmp_path / "run"),
            "--max-train-iter",
            "3",
            "system.collectors=1",
            *FAST,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    out.close()
    workers = []
    try:
        assert wait_for(lambda: "coordinator at" in (tmp_path / "coordinator.out").read_text(), 60)
        address = re.search(r"coordinator at (\S+);", (tmp_path / "coordinator.out").read_text())
        address = address.group(1)
        for role in ("learner", "collector"):
            workers.append(
                subprocess.Popen(
                    [*base, role, "--coordinator", address, "--worker-id", f"{role}-x"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
            )
        assert coordinator.wait(timeout=90) == 0, (tmp_path / "coordinator.out").read_text()
        assert all(w.wait(timeout=15) == 0 for w in workers)  # closed by the coordinator
    finally:
        for proc in [coordinator, *workers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["train_iter"] == 3 and result["stop_reason"] == "max_train_iter"
    assert not [p for p in (tmp_path / "run" / "data").rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    ("role", "cores", "collectors", "threads"),
    [
        ("collector", 16, 2, 1),
        ("learner", 2, 1, 1),  # the other core is the collector's
        ("learner", 2, 2, 1),  # never fewer than one
        ("learner", 8, 2, 6),
    ],
)
def test_worker_threads_leave_the_collectors_their_cores(
    monkeypatch, role, cores, collectors, threads
):
    from ding_lite.utils import threads as torch_threads

    monkeypatch.setattr(torch_threads.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert torch_threads.worker_threads(role, collectors) == threads


def test_spawn_sets_worker_threads_unless_the_user_did(monkeypatch, tmp_path):
    from ding_lite.config import compile_config
    from ding_lite.entry.launch import local as launcher

    seen = []
    monkeypatch.setattr(launcher.subprocess, "Popen", lambda cmd, **kw: seen.append(kw["env"]))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cfg = compile_config("pendulum_ppo_parallel")
    launcher.spawn_worker("learner", "learner0", "127.0.0.1:1", "tok", cfg, tmp_path)
    launcher.spawn_worker("collector", "collector0", "127.0.0.1:1", "tok", cfg, tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    launcher.spawn_worker("collector", "collector1", "127.0.0.1:1", "tok", cfg, tmp_path)
    # A number in the config goes to every worker, over the user's OMP_NUM_THREADS too.
    cfg = compile_config("pendulum_ppo_parallel", ["system.torch_threads=5"])
    launcher.spawn_worker("collector", "collector2", "127.0.0.1:1", "tok", cfg, tmp_path)
    assert [env["OMP_NUM_THREADS"] for env in seen] == ["2", "1", "3", "5"]
    assert all(env["DING_LITE_TOKEN"] == "tok" for env in seen)
