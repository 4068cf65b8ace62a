"""Damaged run files meet every reader with one line (issue 40, findings 7 and 8).

The files are a real run's (the session's ``selfplay_run``), copied and edited the way the
fault campaign edited them; ``ding-lite status`` and ``ding-lite plot`` run as real
processes, the dashboard's routes through Flask's test client.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import tb_frame, tb_records
from tensorboardX.proto import event_pb2

from ding_lite.entry.live.dashboard import make_dashboard_app
from ding_lite.utils.log import EVENT_GLOB, TbWriter

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000  # over Python's 4,300 digits of an int read from text


def ding_lite(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ding_lite", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def with_status(folder: Path, text: str | None) -> Path:
    """A run dir whose status.json holds ``text`` (None: a folder named status.json)."""
    folder.mkdir(parents=True)
    if text is None:
        (folder / "status.json").mkdir()
    else:
        (folder / "status.json").write_text(text)
    return folder


class Raw(str):
    """A JSON fragment spliced in as it is: NaN, 1e999, 5,000 digits, deep nesting."""


def edited(doc: dict, **changes) -> str:
    """``doc`` as JSON with ``changes`` (a :class:`Raw` value spliced in unquoted)."""
    marks = {key: f"@raw:{key}@" for key, value in changes.items() if isinstance(value, Raw)}
    text = json.dumps({**doc, **changes, **marks})
    for key, mark in marks.items():
        text = text.replace(f'"{mark}"', changes[key])
    return text


@pytest.fixture
def status_doc(selfplay_run) -> dict:
    return json.loads((selfplay_run / "status.json").read_text())


def damaged_status_files(doc: dict) -> dict[str, tuple[str | None, str]]:
    """name -> (status.json's text, part of the one-line error it must give)."""
    return {
        "text for a number": (edited(doc, envstep="lots"), "envstep must be a whole number"),
        "text for a float": (
            edited(doc, eval={**doc["eval"], "return_mean": "high"}),
            "eval.return_mean must be a number",
        ),
        "a number for a worker": (edited(doc, workers=[5]), "workers[0] must be a JSON object"),
        "a huge int": (edited(doc, envstep=10**30), "envstep must be a whole number from 0"),
        "a huge pid": (edited(doc, pid=2**40), "pid must be a whole number"),
        "5000 digits": (edited(doc, envstep=Raw(HUGE)), "not JSON"),
        "an infinite float": (edited(doc, sps=Raw("1e999")), "sps must be a number"),
        "NaN": (edited(doc, sps=Raw("NaN")), "JSON has no NaN"),
        "deep nesting": (DEEP, "nested too deeply"),
        "deep nesting in a field": (edited(doc, eval=Raw(DEEP)), "nested too deeply"),
        "a folder": (None, "a folder, not a status file"),
        "no schema": (edited(doc, schema=2), "not a ding_lite status file"),
    }


def test_status_of_a_damaged_status_json_is_one_line_and_exit_2(tmp_path, status_doc):
    cases = damaged_status_files(status_doc)
    runs = {
        name: with_status(tmp_path / f"run{i}", text)
        for i, (name, (text, _)) in enumerate(cases.items())
    }
    procs = {name: ding_lite("status", str(run)) for name, run in runs.items()}
    for name, proc in procs.items():
        code, out, err = finish(proc)
        expected = cases[name][1]
        assert code == 2, (name, out, err)
        assert out == "" and "Traceback" not in err, (name, err)
        (line,) = err.splitlines()
        assert line.startswith(f"ding-lite: error: cannot read {runs[name]}/status.json: "), name
        assert expected in line, (name, line)


def test_control_characters_never_reach_the_terminal(tmp_path, status_doc):
    worker = {**status_doc["workers"][0], "id": "col\x1b[8mhidden", "host": "h\x1b]0;t\x07x"}
    text = edited(
        status_doc,
        exp_name="\x1b[2J\x1b]0;owned\x07cartpole\x1b[31m",
        stop_detail="line one\nline two\x1b[1A\x1b[2K",
        workers=[worker],
    )
    run = with_status(tmp_path / "run", text)
    code, out, err = finish(ding_lite("status", str(run)))
    assert code == 0 and err == "", err
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("finished (max_train_iter)  [serial]  cartpole\n")
    assert "!! line one line two\n" in out and "colhidden" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    client = make_dashboard_app([run]).test_client()
    shown = client.get("/api/runs/0/status").get_json()
    assert shown["exp_name"] == "cartpole" and shown["workers"][0]["id"] == "colhidden"
    assert "\x1b" not in json.dumps(shown)


def test_the_status_route_refuses_a_damaged_status_json_with_422(tmp_path, status_doc):
    cases = damaged_status_files(status_doc)
    names = ("NaN", "deep nesting", "a folder", "text for a float", "a number for a worker")
    runs = [with_status(tmp_path / f"run{i}", cases[name][0]) for i, name in enumerate(names)]
    good = with_status(tmp_path / "good", json.dumps(status_doc))
    client = make_dashboard_app([*runs, good]).test_client()
    for i, name in enumerate(names):
        answer = client.get(f"/api/runs/{i}/status")
        assert answer.status_code == 422, name
        body = answer.get_json()
        assert body["state"] == "unreadable" and cases[name][1] in body["error"], name
    answer = client.get(f"/api/runs/{len(names)}/status")
    assert answer.status_code == 200 and answer.get_json()["envstep"] == status_doc["envstep"]


def record_of(path: Path, tag: str) -> tuple[int, int]:
    """``(offset, length)`` of the record holding scalar ``tag``."""
    data = path.read_bytes()
    for offset, length in tb_records(path):
        event = event_pb2.Event()
        event.ParseFromString(data[offset + 12 : offset + 12 + length])
        if any(v.tag == tag for v in event.summary.value):
            return offset, length
    raise AssertionError(f"no {tag} in {path}")


def run_copy(selfplay_run: Path, folder: Path) -> tuple[Path, Path]:
    """A copy of the real run's config and tensorboard file: (run dir, event file)."""
    (folder / "tb").mkdir(parents=True)
    shutil.copy(selfplay_run / "config.json", folder / "config.json")
    (source,) = (selfplay_run / "tb").glob(EVENT_GLOB)
    return folder, Path(shutil.copy(source, folder / "tb" / source.name))


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def damaged_run(selfplay_run: Path, folder: Path) -> tuple[Path, list[str]]:
    """A copy of the real run with two damaged records: (run dir, what each reader says).

    The run's event file gets one bit of a scalar's value flipped (only the CRC can tell);
    a learner's file after it holds a good record, then a well-framed record that is no
    event (before, its DecodeError answered 500 on every poll, dropped the points read, and
    ended ``ding-lite plot`` with a traceback).
    """
    run, events = run_copy(selfplay_run, folder)
    offset, length = record_of(events, "losses/value_loss")
    flip(events, offset + 12 + length - 2)
    learner = TbWriter(run / "tb" / "learner0")
    learner.add_scalar("losses/learner_loss", 0.5, 64)
    learner.close()
    forged_at = learner.path.stat().st_size
    with open(learner.path, "ab") as f:
        f.write(tb_frame(b"\x0a\xff\xff\xff\xff"))
    return run, [
        f"{events}: the record at byte {offset:,} fails its checksum; skipped",
        f"{learner.path}: the record at byte {forged_at:,} is not a tensorboard event; skipped",
    ]


def test_the_scalars_route_skips_a_damaged_record_and_keeps_the_rest(
    tmp_path, selfplay_run, capsys
):
    run, said = damaged_run(selfplay_run, tmp_path / "run")
    client = make_dashboard_app([run]).test_client()
    answer = client.get("/api/runs/0/scalars?cursor=0")
    assert answer.status_code == 200
    series = answer.get_json()["series"]
    assert "losses/value_loss" not in series and "charts/eval_return" in series
    assert len(series) == 25 and series["losses/learner_loss"][0][:2] == [64, 0.5]
    assert capsys.readouterr().err.splitlines() == [f"dashboard: {line}" for line in said]
    again = client.get(f"/api/runs/0/scalars?cursor={answer.get_json()['cursor']}")
    assert again.status_code == 200 and again.get_json()["series"] == {}
    assert capsys.readouterr().err == ""  # said once


def test_plot_skips_a_damaged_record_in_one_line_and_refuses_a_file_with_none(
    tmp_path, selfplay_run
):
    run, said = damaged_run(selfplay_run, tmp_path / "run")
    broken, broken_events = run_copy(selfplay_run, tmp_path / "broken")
    flip(broken_events, tb_records(broken_events)[0][0])  # the first length: nothing is read
    out_png, none_png = tmp_path / "curves.png", tmp_path / "none.png"
    procs = [
        ding_lite("plot", str(run), "--out", str(out_png)),
        ding_lite("plot", str(broken), "--out", str(none_png)),
    ]
    code, out, err = finish(procs[0])
    assert code == 0 and "Traceback" not in err, err
    assert err.splitlines() == [f"ding-lite: warning: {line}" for line in said]
    assert out.startswith("charts/eval_return aircombat_selfplay_ppo: 1 run(s)")
    assert out_png.stat().st_size > 0
    code, out, err = finish(procs[1])
    assert code == 2 and out == "" and not none_png.exists()
    (line,) = err.splitlines()
    assert line.startswith(f"ding-lite: error: {broken}: no readable scalar in its event files")
    assert "damaged length" in line
