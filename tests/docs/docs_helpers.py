"""Pulls marked code blocks out of the reST pages under docs/ (used by the docs tests)."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
    text = (DOCS / page).read_text(encoding="utf-8")
    begin, end = f"\n.. begin {name}\n", f"\n.. end {name}\n"
    assert text.count(begin) == 1, f"docs/{page}: expected one '.. begin {name}' marker"
    assert text.count(end) == 1, f"docs/{page}: expected one '.. end {name}' marker"
    region = text.split(begin, 1)[1].split(end, 1)[0]
    lines = region.splitlines()
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
