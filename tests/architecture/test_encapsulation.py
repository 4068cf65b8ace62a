"""Objects keep their insides to themselves (STYLE.md: collaborators are passed in, typed).

Two rules, checked on every module of ding_lite by reading its source:

- No module reads a private attribute of another class's instance (``other._x``). Reading
  ``self._x``, ``cls._x`` and ``super()._x`` is the class's own business; so is ``other._x``
  inside a class that itself defines ``_x`` (``__eq__`` comparing two of its own). A
  private name of an imported *module* (``os._exit``) is that module's public API.
- No class keeps a back-reference to its owner: a method never passes ``self`` to a
  constructor (``CollectorPool(self)``), which is how an object ends up holding the whole
  of the one that made it. Handing ``self`` to a plain function for the length of a call
  (``snapshot(self)``) keeps nothing and is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ding_lite

PACKAGE_ROOT = Path(ding_lite.__file__).parent

# "path:attribute" -> why reading it is fine. Keep this short.
PRIVATE_READ_ALLOWED: dict[str, str] = {}
# A NamedTuple's public API has a leading underscore so that it cannot clash with a field.
NAMEDTUPLE_API = {"_fields", "_field_defaults", "_asdict", "_replace", "_make"}
# "path:Constructor" -> why passing self to it keeps no owner.
SELF_TO_CONSTRUCTOR_ALLOWED = {
    # A classmethod that copies the env's current positions into a new record: the Frame
    # holds tensors, never the env.
    "entry/trained/render.py:Frame.of": "copies positions; keeps no reference",
}


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        out.append((path.relative_to(PACKAGE_ROOT).as_posix(), ast.parse(path.read_text())))
    return out


def _module_names(tree: ast.Module) -> set[str]:
    """Names bound to modules by imports anywhere in the file (``import os``,
    ``from ding_lite.utils import stop``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            # A name imported from a package may be a submodule; lower-case names that are
            # not called like functions are treated as modules only if they are used as
            # attribute bases, which is what this set is consulted for.
            names.update(a.asname or a.name for a in node.names if a.name.islower())
    return names


def _own_privates(cls: ast.ClassDef) -> set[str]:
    """Private names a class defines: its methods and the ``self._x`` it assigns."""
    names = {
        n.name
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("_")
    }
    for node in ast.walk(cls):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    names.add(sub.attr)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if n.startswith("_")}


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _private_reads(rel: str, tree: ast.Module) -> list[str]:
    modules = _module_names(tree)
    found = []

    def visit(node: ast.AST, own: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            own = own | _own_privates(node)
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            base = node.value
            mine = isinstance(base, ast.Name) and base.id in ("self", "cls")
            parent = (
                isinstance(base, ast.Call)
                and isinstance(base.func, ast.Name)
                and base.func.id == "super"
            )
            module = isinstance(base, ast.Name) and base.id in modules
            if not (mine or parent or module or node.attr in own or node.attr in NAMEDTUPLE_API):
                key = f"{rel}:{node.attr}"
                if key not in PRIVATE_READ_ALLOWED:
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, own)

    visit(tree, set())
    return found


def _callee(func: ast.expr) -> str:
    return ast.unparse(func)


def _self_to_constructor(rel: str, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _callee(node.func)
        if not name.split(".")[-1][:1].isupper() and not name.split(".")[0][:1].isupper():
            continue  # a function call: it keeps nothing once it returns
        args = [*node.args, *(k.value for k in node.keywords)]
        if any(isinstance(a, ast.Name) and a.id == "self" for a in args):
            if f"{rel}:{name}" not in SELF_TO_CONSTRUCTOR_ALLOWED:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_no_module_reads_another_objects_private_attributes():
    found = [hit for rel, tree in _sources() for hit in _private_reads(rel, tree)]
    assert not found, "private attributes of other objects read:\n" + "\n".join(found)


def test_no_class_hands_itself_to_an_object_it_makes():
    found = [hit for rel, tree in _sources() for hit in _self_to_constructor(rel, tree)]
    assert not found, "back-references to an owner:\n" + "\n".join(found)


def test_the_checks_catch_what_they_are_for():
    """Each rule flags a small example of what it forbids, and passes its allowed cases."""
    bad = ast.parse(
        "class Pool:\n"
        "    def __init__(self, owner):\n"
        "        self.owner = owner\n"
        "    def size(self):\n"
        "        return self.owner._count\n"
        "class Owner:\n"
        "    def __init__(self):\n"
        "        self._count = 0\n"
        "        self.pool = Pool(self)\n"
    )
    assert _private_reads("x.py", bad) == ["x.py:5: self.owner._count"]
    assert _self_to_constructor("x.py", bad) == ["x.py:9: Pool(self)"]
    good = ast.parse(
        "import os\n"
        "class Count:\n"
        "    def __init__(self):\n"
        "        self._n = 0\n"
        "    def __eq__(self, other):\n"
        "        return self._n == other._n\n"
        "    def _finish(self):\n"
        "        os._exit(0)\n"
        "        return super()._finish(), type(self), snapshot(self)\n"
    )
    assert _private_reads("y.py", good) == []
    assert _self_to_constructor("y.py", good) == []
