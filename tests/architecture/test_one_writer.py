"""One writer per artifact (STYLE.md): one module writes result.json, one installs the
SIGTERM handler. Both are found by reading every module's syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

import ding_lite

PACKAGE_ROOT = Path(ding_lite.__file__).parent


def _trees() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE_ROOT.parent)): ast.parse(p.read_text(encoding="utf-8"))
        for p in sorted(PACKAGE_ROOT.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _modules_naming(text: str) -> set[str]:
    """Modules whose code (not docstrings) holds a string with ``text`` in it."""
    found = set()
    for path, tree in _trees().items():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and text in node.value
                and id(node) not in docs
            ):
                found.add(path)
    return found


def _calls_of(module: str, function: str) -> set[str]:
    """Modules that call ``module.function(...)`` or a bare ``function`` imported from it."""
    found = set()
    for path, tree in _trees().items():
        imported = any(
            isinstance(node, ast.ImportFrom)
            and node.module == module
            and any(a.name == function for a in node.names)
            for node in ast.walk(tree)
        )
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            dotted = (
                isinstance(f, ast.Attribute)
                and f.attr == function
                and isinstance(f.value, ast.Name)
                and f.value.id == module
            )
            if dotted or (imported and isinstance(f, ast.Name) and f.id == function):
                found.add(path)
    return found


def test_one_module_writes_result_json() -> None:
    # Every writer needs the file's name; only the run lifecycle spells it (RESULT_FILE).
    assert _modules_naming("result.json") == {"ding_lite/entry/run/lifecycle.py"}
    writers = {
        path
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "write_result"
    }
    assert writers == {"ding_lite/entry/run/lifecycle.py"}


def test_one_module_installs_signal_handlers() -> None:
    # SIGTERM is met one way everywhere: ding_lite.utils.stop.sigterm_interrupts (and the
    # same module's signals_held, which holds signals back for a moment).
    assert _calls_of("signal", "signal") == {"ding_lite/utils/stop.py"}


def test_the_scans_see_what_they_look_for(tmp_path, monkeypatch) -> None:
    root = tmp_path / "ding_lite"
    root.mkdir()
    (root / "a.py").write_text(
        '"""Writes result.json."""\nimport signal\n\ndef f(p):\n'
        '    signal.signal(signal.SIGTERM, print)\n    (p / "result.json").write_text("")\n'
    )
    (root / "b.py").write_text("from signal import signal\nsignal(15, print)\n")
    monkeypatch.setitem(globals(), "PACKAGE_ROOT", root)
    assert _modules_naming("result.json") == {"ding_lite/a.py"}
    assert _calls_of("signal", "signal") == {"ding_lite/a.py", "ding_lite/b.py"}
