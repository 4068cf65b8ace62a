"""Two hosts tune one study through its storage, a journal file on the filesystem both
mount, and no trial runs twice (docs/tune.rst, "Sharing a study")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TUNE_EXPERIMENT, TUNE_LR_SPACE

optuna = pytest.importorskip("optuna")


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_hosts_share_one_study_through_a_journal_file(hosts, tmp_path: Path):
    net = hosts("a", "b")
    (tmp_path / "tiny.yaml").write_text(TUNE_EXPERIMENT)
    (tmp_path / "space.yaml").write_text(TUNE_LR_SPACE)
    journal = tmp_path / "shared" / "study.journal"
    argv = [sys.executable, "-m", "ding_lite", "tune", "-c", str(tmp_path / "tiny.yaml")]
    argv += ["--space", str(tmp_path / "space.yaml"), "--study", "shared", "--trials", "3"]
    argv += ["--storage", f"journal:{journal}", "--out", str(tmp_path / "out"), "--seeds", "1"]
    argv += ["--objective", "final", "--sampler", "random", "--pruner", "none"]
    procs = {
        name: net.start(name, argv, as_host=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for name in ("a", "b")
    }
    outs = {name: proc.communicate(timeout=200)[0].decode() for name, proc in procs.items()}
    assert all(proc.returncode == 0 for proc in procs.values()), outs
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal))
    )
    trials = optuna.load_study(study_name="shared", storage=storage).get_trials()
    # Six trials, three from each host, each numbered once with a run dir of its own.
    assert sorted(t.number for t in trials) == list(range(6))
    assert all(t.state.name == "COMPLETE" for t in trials)
    by_host = [t.user_attrs["host"].split(":")[0] for t in trials]
    assert sorted(by_host) == ["a"] * 3 + ["b"] * 3, by_host
    assert len({t.params["policy.learn.learning_rate"] for t in trials}) == 6
    runs = sorted(p.name for p in (tmp_path / "out" / "shared" / "trials").iterdir())
    assert runs == [f"{n:04d}_seed7000" for n in range(6)]
    for name, out in outs.items():  # each host printed its own three trials
        mine = [t.number for t, host in zip(trials, by_host, strict=True) if host == name]
        assert all(f"trial {n} COMPLETE" in out for n in mine), out
