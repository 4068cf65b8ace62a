"""The layer rules of DESIGN.md ("Who may import whom"), checked on every module's imports.

Each module's imports are read from its source (top level and inside functions alike), so a
lazy import inside a function cannot hide a dependency the layering forbids.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import ding_lite

PACKAGE_ROOT = Path(ding_lite.__file__).parent
MAX_MODULE_LINES = 400

# Layer of a module: its first sub-package below ding_lite ("worker.learner" and
# "worker.collector" are layers of their own).
ALL_LAYERS = {
    "config",
    "utils",
    "envs",
    "model",
    "rl_utils",
    "policy",
    "data",
    "worker.learner",
    "worker.collector",
    "coordinator",
    "interaction",
    "league",
    "entry",
}

# layer -> the ding_lite layers it may import (besides itself). entry may import anything.
ALLOWED = {
    "utils": {"config"},
    "config": {"utils"},
    "rl_utils": set(),
    "envs": {"utils", "config"},
    "model": {"utils", "config", "rl_utils", "envs"},
    "policy": {"utils", "config", "rl_utils", "model", "envs"},
    "data": {"utils", "config"},
    "interaction": {"utils", "config"},
    "league": {"utils", "config"},
    "coordinator": {"utils", "config", "interaction", "league"},
    "worker.learner": {"utils", "config", "rl_utils", "model", "policy", "envs", "data", "league"},
    "worker.collector": {
        *("utils", "config", "rl_utils", "model", "policy", "envs", "data", "league"),
    },
    "entry": ALL_LAYERS,
    # ding_lite/worker/__init__.py gathers both roles; it must not reach the service layers.
    "worker": {"utils", "config", "worker.learner", "worker.collector"},
}
# Single modules a layer may import outside its allowed layers: pure-Python helpers that
# import nothing heavy (utils.registry imports only utils.errors, which imports nothing of
# ding_lite); rl_utils registers its estimators on the common Registry.
ALLOWED_MODULES = {"rl_utils": {"ding_lite.utils.registry"}}
# Layers that move JSON and metadata only: they never import torch.
TORCH_FREE = {"interaction", "coordinator", "league"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE_ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _layer(dotted: str) -> str | None:
    """``ding_lite.worker.learner.comm.x`` -> ``worker.learner``; None for the package root."""
    parts = dotted.split(".")[1:]
    if not parts:
        return None
    if parts[0] == "worker" and len(parts) > 1:
        return f"worker.{parts[1]}"
    return parts[0] if parts[0] in ALL_LAYERS or parts[0] == "worker" else None


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = _from_module(node, path)
            found.append((node.lineno, name))
            # ``from ding_lite import worker`` style: the imported names may be packages.
            if name == "ding_lite":
                found += [(node.lineno, f"ding_lite.{a.name}") for a in node.names]
    return found


def _from_module(node: ast.ImportFrom, path: Path) -> str:
    """The absolute name of the module a ``from ... import`` in ``path`` reads from."""
    if not node.level:
        return node.module or ""
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _violations() -> list[str]:
    problems = []
    for path in _modules():
        layer = _layer(_module_name(path))
        if layer is None:
            continue  # the package root and __main__ re-export or dispatch
        allowed = ALLOWED[layer] | {layer}
        for line, name in _imports(path):
            where = f"{path.relative_to(PACKAGE_ROOT.parent)}:{line}"
            if name == "torch" or name.startswith("torch."):
                if layer in TORCH_FREE:
                    problems.append(f"{where}: the {layer} layer imports {name}")
                continue
            if not name.startswith("ding_lite."):
                continue
            target = _layer(name)
            if name in ALLOWED_MODULES.get(layer, ()):
                continue
            if target is not None and target not in allowed:
                problems.append(f"{where}: {layer} imports {name} ({target})")
    return problems


def test_every_module_keeps_to_its_layer() -> None:
    problems = _violations()
    assert not problems, "layer rules of DESIGN.md broken:\n" + "\n".join(problems)


def test_the_check_sees_a_forbidden_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The walk must catch a lazy import inside a function, relative or absolute.
    fake_root = tmp_path / "ding_lite"
    (fake_root / "envs").mkdir(parents=True)
    (fake_root / "__init__.py").write_text("")
    (fake_root / "envs" / "__init__.py").write_text("")
    (fake_root / "envs" / "bad.py").write_text(
        "def f():\n    from ..entry.ppo_agent import PPOAgent\n    return PPOAgent\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_ROOT", fake_root)
    assert any("envs imports ding_lite.entry.ppo_agent" in p for p in _violations())


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE_ROOT.parent)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"


def test_importing_the_command_line_does_not_import_torch() -> None:
    code = "import sys, ding_lite.entry.cli.command, ding_lite; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False", out.stderr


def test_lazy_package_exports_resolve() -> None:
    for name in ding_lite.__all__:
        assert getattr(ding_lite, name) is not None
    with pytest.raises(AttributeError):
        ding_lite.no_such_name  # noqa: B018


# --- import circles ------------------------------------------------------------------------


def _edges(path: Path, known: set[str]) -> set[str]:
    """The ding_lite modules ``path`` imports, at module level or inside a function.

    ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to
    ``pkg`` (its ``__init__``). An import of a submodule is not counted as an import of
    the package above it: a package ``__init__`` that re-exports its submodules is no
    circle by itself, while a submodule importing its own package's ``__init__`` that
    imports it back is. Imports under ``if TYPE_CHECKING:`` never run and are left out.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path)
    skipped = {
        id(node)
        for guard in ast.walk(tree)
        if isinstance(guard, ast.If) and "TYPE_CHECKING" in ast.unparse(guard.test)
        for stmt in guard.body
        for node in ast.walk(stmt)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path)
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in known else module)
    return {m for m in found if m in known and m != name}


def _import_circles() -> list[list[str]]:
    """Every set of ding_lite modules that import each other in a circle (Tarjan's strongly
    connected components of the import graph, larger than one module)."""
    paths = {_module_name(p): p for p in _modules()}
    known = set(paths)
    graph = {name: sorted(_edges(path, known)) for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_no_import_circle() -> None:
    """No two ding_lite modules import each other, directly or through others: entry/
    (entry importing entry included) and every other package, which had none when this
    check came (imports inside functions count; ``TYPE_CHECKING`` ones do not)."""
    circles = _import_circles()
    assert not circles, "import circles (break them):\n" + "\n".join(map(" -> ".join, circles))


def test_the_circle_check_sees_a_lazy_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake_root = tmp_path / "ding_lite"
    (fake_root / "entry").mkdir(parents=True)
    (fake_root / "__init__.py").write_text("")
    (fake_root / "entry" / "__init__.py").write_text("from ding_lite.entry.a import f\n")
    (fake_root / "entry" / "a.py").write_text("from ding_lite.entry.b import g\nf = g\n")
    (fake_root / "entry" / "b.py").write_text(
        "def g():\n    from ding_lite.entry import f\n    return f\n"
        "def h():\n    from .c import x\n    return x\n"
    )
    (fake_root / "entry" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import g\nx = 1\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_ROOT", fake_root)
    # a -> b -> the package's __init__ (for f) -> a: one circle, though b imports it lazily;
    # c's TYPE_CHECKING import is none.
    assert _import_circles() == [["ding_lite.entry", "ding_lite.entry.a", "ding_lite.entry.b"]]
