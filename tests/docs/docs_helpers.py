"""Pulls marked code blocks out of the reST pages under docs/ (used by the docs tests)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs"

# Overrides that make a serial run take a fraction of a second.
TINY = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
]


def extract_blocks(page: str, name: str, language: str = "python") -> list[str]:
    """Returns the ``code-block:: <language>`` bodies between ``.. begin <name>`` and
    ``.. end <name>`` comments of ``docs/<page>``, dedented, in page order."""
    lines = marked_region(page, name).splitlines()
    blocks: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != f".. code-block:: {language}":
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
            body.append(lines[i])
            i += 1
        blocks.append(textwrap.dedent("\n".join(body)).strip("\n") + "\n")
    assert blocks, f"docs/{page}: no {language} code block between the '{name}' markers"
    return blocks


def marked_region(page: str, name: str) -> str:
    """The text between ``.. begin <name>`` and ``.. end <name>`` of ``docs/<page>``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    begin, end = f"\n.. begin {name}\n", f"\n.. end {name}\n"
    assert text.count(begin) == 1, f"docs/{page}: expected one '.. begin {name}' marker"
    assert text.count(end) == 1, f"docs/{page}: expected one '.. end {name}' marker"
    return text.split(begin, 1)[1].split(end, 1)[0]


ROW_KEY = re.compile(r"^\s*\* - ``([A-Za-z0-9_.]+)``\s*$")
ROW_VALUE = re.compile(r"^\s*- ``(.*)``\s*$")


def key_value_rows(page: str, name: str) -> dict[str, Any]:
    """``{dotted key: documented value}`` of the two-column list-table in a marked region
    (each row ``* - ``key``  - ``value``; values are Python literals)."""
    rows: dict[str, Any] = {}
    lines = marked_region(page, name).splitlines()
    for i, line in enumerate(lines):
        m = ROW_KEY.match(line)
        if not m or m.group(1) == "Key":
            continue
        key = m.group(1)
        assert key not in rows, f"{key} is documented twice in '{name}'"
        value = ROW_VALUE.match(lines[i + 1]) if i + 1 < len(lines) else None
        assert value, f"row {key} in '{name}' has no ``value`` in its second column"
        rows[key] = ast.literal_eval(value.group(1))
    return rows
