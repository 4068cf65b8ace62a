"""Every page under docs/ parses as reStructuredText without warnings (Sphinx not needed)."""

from __future__ import annotations

import io

import pytest
from docs_helpers import DOCS

docutils_core = pytest.importorskip("docutils.core")
from docutils import nodes  # noqa: E402
from docutils.parsers.rst import Directive, directives, roles  # noqa: E402

PAGES = sorted(p.name for p in DOCS.glob("*.rst"))
LABELS = {
    line[4:-1]
    for page in PAGES
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines()
    if line.startswith(".. _") and line.endswith(":")
}


class _Toctree(Directive):
    """Stands in for Sphinx's toctree: checks its entries name existing pages."""

    has_content = True
    option_spec = {"maxdepth": int, "caption": str, "hidden": directives.flag}

    def run(self):
        for entry in self.content:
            if entry.strip() and not (DOCS / f"{entry.strip()}.rst").is_file():
                raise self.error(f"toctree entry '{entry.strip()}' has no page")
        return []


def _sphinx_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    missing = (name == "doc" and not (DOCS / f"{text}.rst").is_file()) or (
        name == "ref" and text not in LABELS
    )
    if missing:
        msg = inliner.reporter.error(f":{name}: target '{text}' does not exist", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.literal(rawtext, text)], []


directives.register_directive("toctree", _Toctree)
roles.register_local_role("doc", _sphinx_role)
roles.register_local_role("ref", _sphinx_role)


def test_index_lists_every_page():
    text = (DOCS / "index.rst").read_text(encoding="utf-8")
    for page in PAGES:
        if page != "index.rst":
            assert f"   {page[:-4]}\n" in text, f"{page} is not in the toctree of index.rst"


@pytest.mark.parametrize("page", PAGES)
def test_page_is_valid_rst(page):
    warnings = io.StringIO()
    docutils_core.publish_doctree(
        (DOCS / page).read_text(encoding="utf-8"),
        source_path=str(DOCS / page),
        settings_overrides={"warning_stream": warnings, "report_level": 2, "halt_level": 5},
    )
    assert warnings.getvalue() == "", warnings.getvalue()
