"""docs/monitoring.rst says what the readers of run files do, in the words they print."""

from __future__ import annotations

import json

from helpers import DOCS

from ding_lite.entry.cli.command import main
from ding_lite.entry.live.dashboard import beyond_loopback
from ding_lite.entry.live.status_file import MAX_STATUS_BYTES

PAGE = (DOCS / "monitoring.rst").read_text(encoding="utf-8")


def test_the_example_of_a_refused_status_json_is_what_status_prints(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "status.json").write_text(
        json.dumps({"schema": 1, "envstep": "lots"})
    )
    assert main(["status", "runs/a"]) == 2
    line = capsys.readouterr().err.strip()
    assert f"\n    {line}\n" in PAGE, line
    assert f"at most {MAX_STATUS_BYTES >> 20} MiB" in " ".join(PAGE.split())


def test_the_warning_beyond_loopback_is_what_the_dashboard_prints():
    assert f"\n      {beyond_loopback('0.0.0.0', 8080)}\n" in PAGE
