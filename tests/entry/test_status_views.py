"""status.json, ``ding-lite status`` and the dashboard's routes, without a parallel run
(tests/entry/test_live_dashboard.py watches a real one in a browser)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from helpers import TINY_CARTPOLE

from ding_lite import serial_pipeline
from ding_lite.entry.cli.command import main
from ding_lite.entry.live.dashboard import make_dashboard_app
from ding_lite.entry.live.snapshots import RateMeter, final_state
from ding_lite.entry.live.status_file import StatusWriter, read_status
from ding_lite.entry.live.terminal import WIDTH, liveness, render_status
from ding_lite.utils.log import build_tb_logger, close_tb_logger

SMALL = TINY_CARTPOLE


def doc(**changes):
    """A status document as a parallel run writes one."""
    base = {
        "schema": 1,
        "pipeline": "parallel",
        "exp_name": "an_experiment_with_a_rather_long_name_" * 3,
        "exp_dir": "/somewhere/" + "deep/" * 30,
        "host": "elsewhere",
        "pid": 1,
        "state": "running",
        "started_at": 0.0,
        "updated_at": time.time(),
        "elapsed_s": 12.5,
        "envstep": 123_456,
        "max_env_step": 1_000_000,
        "iteration": 60,
        "sps": 9876.5,
        "policy_version": 60,
        "eval": {"return_mean": 187.25, "win_rate": 0.5, "policy_version": 58, "envstep": None},
        "best_eval": {"return_mean": 190.0, "policy_version": 50},
        "train_return": 150.0,
        "lag": {"recent": [1.0, 0.5, 2.0], "mean": 0.9, "max": 2},
        "ledger": {
            "written": 130,
            "trained": 120,
            "waiting": 4,
            "in_learner": 2,
            "dropped_stale": 1,
            "dropped_invalid": 1,
            "dropped_rollback": 1,
            "dropped_run_end": 1,
        },
        "restarts": 1,
        "failed_tasks": 2,
        "dropped_env_steps": 512,
        "waiting_on": "rollouts from collector0, collector1 (100/4096 samples)",
        "stop_reason": None,
        "workers": [
            {
                "id": "collector-with-a-very-long-id-0",
                "role": "collector",
                "host": "a-very-long-host-name.example.org",
                "state": "running",
                "heartbeat_age_s": 0.4,
                "version": 59,
                "rollouts": 61,
                "evaluates": True,
            },
            {
                "id": "learner0",
                "role": "learner",
                "host": "127.0.0.1",
                "state": "training",
                "heartbeat_age_s": 0.1,
                "version": 60,
                "rollouts": None,
            },
        ],
    }
    return {**base, **changes}


def test_the_text_view_fits_80_columns_and_shows_every_part():
    text = render_status(doc())
    assert all(len(line) <= WIDTH for line in text.splitlines()), text
    for part in ("env steps 123,456 / 1,000,000", "v59", "written 130", "run_end 1", "restarts 1"):
        assert part in text, text
    assert "learner0" in text and "training" in text and "collector*" in text


def test_a_run_whose_process_is_gone_is_called_so(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import socket

    gone = doc(host=socket.gethostname(), pid=dead.pid, updated_at=time.time() - 30)
    assert f"process {dead.pid} is gone" in liveness(gone)
    assert "no update for" in liveness(doc(updated_at=time.time() - 60))
    assert liveness(doc()) == ""  # fresh
    assert liveness(doc(state="finished", updated_at=0.0)) == ""  # ended properly


def test_status_json_is_whole_json_for_a_reader_during_writes(tmp_path):
    counter = {"n": 0}

    def snapshot():
        counter["n"] += 1
        return {"envstep": counter["n"], "padding": "x" * 20_000}

    writer = StatusWriter(tmp_path, snapshot, pipeline="serial", exp_name="t", interval=0.001)
    writer.start()
    seen = []
    try:
        deadline = time.monotonic() + 30
        while (len(seen) < 300 or len(set(seen)) < 20) and time.monotonic() < deadline:
            seen.append(read_status(tmp_path)["envstep"])  # never a torn file
    finally:
        writer.close("finished", stop_reason="max_env_step")
    final = read_status(tmp_path)
    assert final["state"] == "finished" and final["stop_reason"] == "max_env_step"
    assert len(set(seen)) >= 20 and seen == sorted(seen)
    assert final["writer"]["writes"] == writer.writes and writer.seconds > 0
    assert not [p for p in tmp_path.iterdir() if p.name != "status.json"]  # no temp file left


def test_final_states_and_rate():
    assert final_state("solved") == final_state("max_env_step") == "finished"
    assert final_state("interrupted") == "interrupted"
    assert final_state("stalled") == final_state(None) == "failed"
    rate = RateMeter(window=60)
    assert rate(0) == 0.0
    time.sleep(0.05)
    assert rate(1000) > 0


def test_a_serial_run_keeps_status_json_and_ends_with_its_stop_reason(tmp_path, capsys):
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(tmp_path), max_train_iter=3)
    status = read_status(tmp_path)
    assert status["pipeline"] == "serial" and status["state"] == "finished"
    assert status["stop_reason"] == "max_train_iter" and status["iteration"] == 3
    assert status["envstep"] == 3 * 4 * 16 and status["eval"]["policy_version"] == 3
    assert status["workers"][0]["version"] == 3 and status["workers"][0]["state"] == "finished"
    assert "token" not in json.dumps(status)
    capsys.readouterr()
    assert main(["status", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("finished (max_train_iter)  [serial]  cartpole_ppo")


def test_status_command_errors_are_one_line(tmp_path, capsys):
    assert main(["status", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"ding-lite: error: no such run dir: {tmp_path}/nope"
    assert main(["status", str(tmp_path)]) == 2
    assert "has no status.json" in capsys.readouterr().err
    (tmp_path / "status.json").write_text('{"schema": 1, "state": ')
    assert main(["status", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ding-lite: error: cannot read") and len(err.splitlines()) == 1
    assert main(["status", str(tmp_path), "--interval", "0", "--watch"]) == 2


def test_watch_redraws_until_the_run_ends(tmp_path):
    (tmp_path / "status.json").write_text(json.dumps(doc()))

    def finish():
        time.sleep(0.5)
        (tmp_path / "status.json").write_text(json.dumps(doc(state="finished")))

    threading.Thread(target=finish).start()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ding_lite",
            "status",
            str(tmp_path),
            "--watch",
            "--interval",
            "0.1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\x1b[2J") >= 2 and "finished" in out.stdout.split("\x1b[2J")[-1]


def test_dashboard_routes_read_the_given_runs_only(tmp_path):
    run, empty = tmp_path / "run", tmp_path / "empty"
    (run / "tb" / "learner0").mkdir(parents=True)
    empty.mkdir()
    (run / "status.json").write_text(json.dumps(doc()))
    client = make_dashboard_app([run, empty]).test_client()
    assert client.get("/").status_code == 200 and b"dashboard.js" in client.get("/").data
    assert client.get("/static/dashboard.js").status_code == 200
    for forged in ("/static/..%2Fdashboard.py", "/static/../dashboard.py", "/api/runs/2/status"):
        assert client.get(forged).status_code == 404, forged
    runs = client.get("/api/runs").get_json()["runs"]
    assert [r["name"] for r in runs] == ["run", "empty"]
    assert client.get("/api/runs/0/status").get_json()["envstep"] == 123_456
    assert client.get("/api/runs/1/status").get_json()["state"] == "missing"
    assert client.get("/api/runs/0/scalars?cursor=x").status_code == 400

    writer = build_tb_logger(run / "tb" / "learner0")
    for step in range(3):
        writer.add_scalar("losses/value_loss", float(step), step)
    writer.flush()
    first = client.get("/api/runs/0/scalars?cursor=0").get_json()
    (points,) = first["series"].values()
    assert list(first["series"]) == ["losses/value_loss"]
    assert [p[:2] for p in points] == [[s, float(s)] for s in range(3)]
    assert all(abs(p[2] - time.time()) < 60 for p in points)  # wall times
    writer.add_scalar("losses/value_loss", 7.0, 3)
    writer.add_scalar("charts/nan", float("nan"), 3)  # JSON has no NaN: left out
    writer.flush()
    close_tb_logger(writer)
    again = client.get(f"/api/runs/0/scalars?cursor={first['cursor']}").get_json()
    assert [p[:2] for p in again["series"]["losses/value_loss"]] == [[3, 7.0]]
    assert "charts/nan" not in again["series"] and again["cursor"] == first["cursor"] + 2
    none = client.get(f"/api/runs/0/scalars?cursor={again['cursor']}").get_json()
    assert none == {"cursor": again["cursor"], "series": {}}


def test_dashboard_refuses_a_run_dir_that_is_not_there(tmp_path, capsys):
    assert main(["dashboard", str(tmp_path / "missing"), "--open-for", "0"]) == 2
    assert "no such run dir" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_a_snapshot_that_fails_never_ends_the_run(tmp_path, caplog):
    def broken():
        raise AttributeError("no such figure")

    writer = StatusWriter(tmp_path, broken, pipeline="serial", exp_name="t", interval=0.01)
    writer.start()
    time.sleep(0.1)
    writer.close("failed", stop_reason="stalled")
    final = read_status(tmp_path)
    assert final["state"] == "failed" and final["stop_reason"] == "stalled"
    assert sum("could not be read" in r.message for r in caplog.records) == 1  # said once


def test_a_resumed_run_clears_the_temp_files_a_killed_one_left(tmp_path):
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(tmp_path), max_train_iter=1)
    (tmp_path / "videos").mkdir()
    torn = [tmp_path / ".status.json.k2j4x_1.tmp", tmp_path / "videos" / ".eval_v3.mp4.ab_9.tmp"]
    for path in torn:
        path.write_bytes(b"half")
    serial_pipeline(resume=str(tmp_path), max_train_iter=2)
    assert not any(path.exists() for path in torn)
    assert read_status(tmp_path)["iteration"] == 2
