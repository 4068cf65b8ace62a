"""Every config default lives in ding_lite/config/defaults.py only.

The source of ding_lite is walked with ``ast`` for a literal default given to a config key
anywhere else: ``<config>.get("<key>", <literal>)`` or ``getattr(<config>, "<key>",
<literal>)``, where ``<key>`` is a key ``DEFAULT_CONFIG`` defines (at any depth) and
``<literal>`` is anything ``ast.literal_eval`` reads (``None``, ``3.0``, ``{}``, ``-1``...).

What is a config: a read counts as a config read by its receiver's name (the last name of
``cfg.policy.learn`` is ``learn``): ``cfg``, ``config``, a name ending in ``_cfg`` or
``_config``, or the name of a section of ``DEFAULT_CONFIG`` (``policy``, ``learn``,
``env``, ``system``, ``kl_in_reward``...). Other dicts that happen to share a key name are
not configs and are not read here: a checkpoint's saved state (``state.get("calls", 0)``),
a status document, a task's payload, a model's attributes (``getattr(model, "critic",
True)``: ``getattr`` counts only on a ``cfg``-named receiver, since sections are read with
``.get`` and objects with ``getattr``). So the code names a config as one, and a dict that
is not one by another name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ding_lite
from ding_lite.config.defaults import DEFAULT_CONFIG, FREE_FORM_KEYS

PACKAGE = Path(ding_lite.__file__).parent
ROOT = PACKAGE.parent


def _keys_and_sections() -> tuple[set[str], set[str]]:
    keys, sections = set(), set()

    def walk(tree: dict, prefix: str) -> None:
        for key, value in tree.items():
            dotted = prefix + key
            keys.add(key)
            if isinstance(value, dict) and dotted not in FREE_FORM_KEYS:
                sections.add(key)
                walk(value, dotted + ".")

    walk(DEFAULT_CONFIG, "")
    return keys, sections


KEYS, SECTIONS = _keys_and_sections()


def _name(node: ast.expr) -> str | None:
    """The last name of a receiver: ``cfg.policy.learn`` -> ``learn``, ``cfg`` -> ``cfg``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_config(name: str | None, *, sections: bool = True) -> bool:
    if name is None:
        return False
    named = name in ("cfg", "config") or name.endswith(("_cfg", "_config"))
    return named or (sections and name in SECTIONS)


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _key(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KEYS:
        return node.value
    return None


def literal_defaults(source: str) -> list[tuple[int, str, str]]:
    """``(line, key, the call)`` of every literal default of a config key in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        func, args = node.func, node.args
        if isinstance(func, ast.Attribute) and func.attr == "get" and len(args) == 2:
            key, receiver, default = _key(args[0]), _name(func.value), args[1]
            if key and _is_config(receiver) and _literal(default):
                found.append((node.lineno, key, ast.unparse(node)))
        elif isinstance(func, ast.Name) and func.id == "getattr" and len(args) == 3:
            key, receiver, default = _key(args[1]), _name(args[0]), args[2]
            if key and _is_config(receiver, sections=False) and _literal(default):
                found.append((node.lineno, key, ast.unparse(node)))
    return found


def _offenders() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "defaults.py" and path.parent.name == "config":
            continue
        rel = path.relative_to(ROOT).as_posix()
        for line, key, call in literal_defaults(path.read_text()):
            out.setdefault((rel, key), []).append(f"{rel}:{line}: {call}")
    return out


def test_no_config_key_has_a_literal_default_outside_defaults_py():
    found = [where for calls in _offenders().values() for where in calls]
    assert not found, "defaults belong in ding_lite/config/defaults.py:\n" + "\n".join(found)


def test_the_check_tells_config_reads_from_other_dicts():
    source = """
learn.get("clip_ratio_c", 3.0)
cfg.policy.learn.get("policy_loss", "ppo_clip")
cfg.get("evaluator", {})
getattr(cfg, "seed", 0)
learner_cfg.get("hook", {"x": -1})
state.get("calls", 0)
task_info.get("exp_dir")
getattr(model, "critic", True)
learn.get("clip_ratio_c", DEFAULT)
learn.get("not_a_key", 1)
"""
    keys = [key for _, key, _ in literal_defaults(source)]
    assert keys == ["clip_ratio_c", "policy_loss", "evaluator", "seed", "hook"]
