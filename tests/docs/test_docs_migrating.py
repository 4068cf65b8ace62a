"""Runs docs/migrating.rst's DI-style example exactly as printed."""

from __future__ import annotations

from ding_lite.worker.learner.learner_hook import LEARNER_HOOK_REGISTRY


def test_di_style_example_runs_as_printed(tmp_path, monkeypatch, docs_code, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "docs_di_example"}
    try:
        exec(docs_code("migrating.rst", "di-example"), namespace)
    finally:
        LEARNER_HOOK_REGISTRY._items.pop("loss_printer", None)
    out = capsys.readouterr().out
    assert "trained 4 iterations" in out
    assert "comm learner: 2 policies sent, 2 learn infos" in out
    learner, remote = namespace["learner"], namespace["remote"]
    assert learner.last_iter.val == 4 and remote.train_iter == 2
    printer = next(h for h in learner.hooks["after_iter"] if h.name == "printer")
    assert printer.printed == [0, 2]  # freq=2 from ext_args; last_iter before the bump
    assert (tmp_path / "di_style_run" / "ckpt" / "ckpt_iter00000004.pt").is_file()
    assert (tmp_path / "di_style_comm" / "ckpt").is_dir()
