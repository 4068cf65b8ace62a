"""README.rst as the front page: set-up in the order it must run, the test command CI runs,
a link to every docs page, and the licence."""

from __future__ import annotations

import re

from helpers import DOCS

ROOT = DOCS.parent
README = (ROOT / "README.rst").read_text(encoding="utf-8")
TEST_COMMAND = "pip install -e '.[test]' && pytest"


def first_literal_block(text: str) -> list[str]:
    """The lines of the first ``::`` block, without the indent."""
    body = text.split("::\n\n", 1)[1]
    lines = []
    for line in body.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line.strip())
    return [line for line in lines if line]


def test_readme_starts_with_the_setup_in_order():
    lines = first_literal_block(README)
    assert README.index("::\n\n") < README.index("\n---"), "the commands come before any section"
    cpu_torch = next(i for i, line in enumerate(lines) if "download.pytorch.org/whl/cpu" in line)
    train = next(i for i, line in enumerate(lines) if line.startswith("pip install -e . && "))
    test = lines.index(TEST_COMMAND)
    assert cpu_torch < train < test
    assert "ding-lite serial -c" in lines[train]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci.splitlines()


def test_readme_links_every_docs_page():
    linked = set(re.findall(r"<docs/(\w+)\.rst>`_", README))
    pages = {p.stem for p in DOCS.glob("*.rst")} - {"index"}
    assert pages <= linked, f"docs pages README.rst does not link: {sorted(pages - linked)}"


def test_licence_is_apache_2_and_declared():
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").split()[:4] == [
        "Apache",
        "License",
        "Version",
        "2.0,",
    ]
    assert 'license="Apache-2.0"' in (ROOT / "setup.py").read_text(encoding="utf-8")
    assert "Apache License 2.0" in README
