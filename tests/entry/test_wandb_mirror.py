"""``logger.wandb=true``: a run mirrored to Weights & Biases, checked offline on disk."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TINY_CARTPOLE, tb_frame

from ding_lite.entry.cli.command import main
from ding_lite.entry.reporting import wandb_mirror
from ding_lite.entry.reporting.wandb_mirror import STEP_KEY, WandbMirror, _plain_config, _rows
from ding_lite.utils.log import TbWriter, read_tb_scalars

TINY = TINY_CARTPOLE


def wandb_records(path: Path):
    """The records of a ``.wandb`` file (a LevelDB-style log of wandb's protobuf records:
    a 7-byte file header, then 32 KiB blocks of chunks, each with a 7-byte header: crc,
    length, type FULL=1 / FIRST=2 / MIDDLE=3 / LAST=4)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, pos, parts = 32768, 7, b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack_from("<IHB", data, pos)
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind in (1, 2):
            parts = chunk
        elif kind in (3, 4):
            parts += chunk
        else:
            break  # zeros after the last record
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            yield record


def item_key(item) -> str:
    return item.key or "/".join(item.nested_key)


@pytest.mark.slow
def test_serial_run_mirrored_offline(tmp_path):
    """Every tensorboard scalar, the config and result.json reach the offline W&B run;
    nothing is written outside tmp_path, and nothing reaches the network."""
    env = dict(os.environ)
    env.update(
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DIR=str(tmp_path / "wb"),
        WANDB_CACHE_DIR=str(tmp_path / "wb_cache"),
        WANDB_CONFIG_DIR=str(tmp_path / "wb_config"),
        WANDB_DATA_DIR=str(tmp_path / "wb_data"),
        WANDB_ARTIFACT_DIR=str(tmp_path / "wb_artifacts"),
        HOME=str(tmp_path / "home"),
    )
    env.pop("WANDB_API_KEY", None)
    (tmp_path / "wb").mkdir()
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "cartpole_ppo", "-q", "--seed", "3"]
    cmd += ["--exp-dir", str(run), "--max-train-iter", "2", *TINY]
    cmd += ["logger.wandb=true", "logger.wandb_group=seeds", "logger.wandb_project=test"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    (folder,) = (tmp_path / "wb" / "wandb").glob("offline-run-*")
    (wandb_file,) = folder.glob("run-*.wandb")
    assert not (run / "wandb").exists()  # $WANDB_DIR wins over the run dir

    rows, summary, exit_code, meta = [], {}, None, None
    for record in wandb_records(wandb_file):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            rows.append({item_key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            summary.update({item_key(i): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "run":
            meta = record.run
        elif kind == "exit":
            exit_code = record.exit.exit_code
    assert exit_code == 0
    # The config, and the run's identity.
    config = {i.key: json.loads(i.value_json) for i in meta.config.update}
    assert config["exp_name"] == "cartpole_ppo" and config["seed"] == 3
    assert config["logger"]["wandb_group"] == "seeds" and config["env"]["num_envs"] == 4
    assert (meta.run_group, meta.project, meta.display_name) == ("seeds", "test", "run")
    # Every scalar of the event file, at its env step.
    (events,) = (run / "tb").glob("events.out.tfevents.*")
    logged = {
        (tag, step, value) for tag, pts in read_tb_scalars(events).items() for step, value in pts
    }
    mirrored = {
        (tag, row[STEP_KEY], value)
        for row in rows
        for tag, value in row.items()
        if not tag.startswith("_") and tag != STEP_KEY
    }
    assert {t for t, _, _ in logged} >= {"charts/eval_return", "losses/value_loss"}
    assert mirrored == logged  # float32 values: JSON keeps them exactly
    # result.json's figures are the summary.
    result = json.loads((run / "result.json").read_text())
    for key in ("envstep", "train_iter", "stop_reason", "eval_return_mean", "solved"):
        assert summary[key] == result[key]


def test_missing_wandb_refuses_the_run_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(wandb_mirror, "wandb_installed", lambda: False)
    run = tmp_path / "run"
    argv = ["serial", "-c", "cartpole_ppo", "--exp-dir", str(run), "logger.wandb=true"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pip install 'ding-lite[wandb]'" in err
    assert not run.exists()  # refused before the run wrote anything


class FakeRun:
    """What WandbMirror uses of a wandb run, recorded."""

    name, dir = "fake", "/nowhere"

    def __init__(self, fail_on_log: bool = False) -> None:
        self.rows: list[dict] = []
        self.summary: dict = {}
        self.exit_code: int | None = None
        self.fail_on_log = fail_on_log

    def log(self, row: dict) -> None:
        if self.fail_on_log:
            raise ConnectionError("network down")
        self.rows.append(row)

    def finish(self, exit_code: int = 0) -> None:
        self.exit_code = exit_code


def _two_writers(tb):
    """The coordinator's and a learner's event files, one point each at step 64."""
    coordinator, learner = TbWriter(tb / "coordinator"), TbWriter(tb / "learner0")
    coordinator.add_scalar("charts/eval_return", 10.0, 64)
    learner.add_scalar("losses/value_loss", 2.0, 64)
    return coordinator, learner


def test_mirror_reads_only_what_is_new_of_every_event_file(tmp_path):
    tb = tmp_path / "tb"
    coordinator, learner = _two_writers(tb)
    coordinator.flush()
    learner.flush()
    run = FakeRun()
    mirror = WandbMirror(run, tb, poll_s=60)
    assert mirror.sync() == 2
    assert mirror.sync() == 0
    coordinator.add_scalar("charts/eval_return", 20.0, 128)
    coordinator.close()
    learner.close()
    assert mirror.finish({"envstep": 128, "solved": False}, exit_code=0)
    tags = [(r[STEP_KEY], k) for r in run.rows for k in r if k != STEP_KEY]
    assert sorted(tags) == [(64, "charts/eval_return"), (64, "losses/value_loss")] + [
        (128, "charts/eval_return")
    ]
    assert run.summary == {"envstep": 128, "solved": False} and run.exit_code == 0
    assert mirror.finish() is True  # a second call does nothing


def test_a_failing_wandb_never_ends_the_run(tmp_path):
    writer = TbWriter(tmp_path / "tb")
    writer.add_scalar("charts/SPS", 1.0, 1)
    writer.close()
    run = FakeRun(fail_on_log=True)
    mirror = WandbMirror(run, tmp_path / "tb", poll_s=60)
    assert mirror.sync() == 0  # logged as a warning, mirroring stops
    assert mirror.finish({"envstep": 1}) and run.exit_code == 0 and run.summary == {}


def test_a_damaged_event_file_costs_its_bad_record_only(tmp_path, caplog):
    """A bad event (well framed, good CRCs) is one warning, once; every good point still
    reaches W&B (issue 40)."""
    tb = tmp_path / "tb"
    coordinator, learner = _two_writers(tb)
    coordinator.close()
    learner.close()
    with open(coordinator.path, "ab") as f:
        f.write(tb_frame(b"\x0a\xff\xff\xff\xff"))
    run = FakeRun()
    mirror = WandbMirror(run, tb, poll_s=60)
    assert mirror.sync() == 2 and mirror.sync() == 0
    assert mirror.finish({"envstep": 64}) and run.exit_code == 0
    tags = sorted(k for r in run.rows for k in r if k != STEP_KEY)
    assert tags == ["charts/eval_return", "losses/value_loss"]
    (warned,) = [r.message for r in caplog.records if r.levelname == "WARNING"]
    assert warned.startswith(f"W&B mirror: {coordinator.path}: the record at byte ")
    assert warned.endswith("is not a tensorboard event; skipped")


def test_rows_group_one_step_until_a_tag_repeats():
    points = [(0.0, 64, "a", 1.0), (0.1, 64, "b", 2.0), (0.2, 64, "a", 3.0), (0.3, 128, "a", 4.0)]
    assert _rows(points) == [
        {STEP_KEY: 64, "a": 1.0, "b": 2.0},
        {STEP_KEY: 64, "a": 3.0},
        {STEP_KEY: 128, "a": 4.0},
    ]


def test_the_token_is_never_sent():
    cfg = {"system": {"token": "s3cret", "host": "127.0.0.1"}, "seed": 0}
    assert _plain_config(cfg)["system"] == {"token": "<hidden>", "host": "127.0.0.1"}
    assert cfg["system"]["token"] == "s3cret"  # the run's own config is untouched


def test_wandb_that_cannot_start_refuses_the_run_in_one_line(tmp_path, capsys, monkeypatch):
    import wandb

    def no_login(**kwargs):
        raise wandb.errors.UsageError("No API key configured.\nUse `wandb login` to log in.")

    monkeypatch.setattr(wandb, "init", no_login)
    run = tmp_path / "run"
    argv = ["serial", "-c", "cartpole_ppo", "--exp-dir", str(run), "logger.wandb=true"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "No API key configured" in err and "wandb login" in err
    assert not run.exists()  # the run never trained: it leaves nothing
