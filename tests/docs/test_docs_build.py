"""The docs site builds with Sphinx, warnings as errors, and its API page covers the package.

This is also the reST check of every page: Sphinx parses each one with the real roles,
directives and toctree, so a parse error, an unknown role, a broken ``:doc:``/``:ref:``
target or a page left out of the toctree fails the build. sphinx and furo are imported
unconditionally: without the ``test`` extra this file errors instead of skipping.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import furo  # noqa: F401  (the theme docs/conf.py names)
import pytest
import sphinx  # noqa: F401
from helpers import DOCS

import ding_lite

pytestmark = pytest.mark.slow

BUILD_TIMEOUT_S = 150


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Builds docs/ into a fresh folder (``-W``: any warning fails) and returns the folder."""
    out = tmp_path_factory.mktemp("docs_html")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    proc = subprocess.run(
        [*cmd, str(DOCS), str(out)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert proc.returncode == 0, f"sphinx-build -W failed:\n{proc.stderr}{proc.stdout}"
    return out


@pytest.mark.timeout(BUILD_TIMEOUT_S + 30)
def test_every_page_is_built(site):
    pages = sorted(p.stem for p in DOCS.glob("*.rst"))
    assert "api" in pages and "architecture" in pages
    missing = [page for page in pages if not (site / f"{page}.html").is_file()]
    assert missing == [], f"pages without HTML: {missing}"


@pytest.mark.timeout(BUILD_TIMEOUT_S + 30)
def test_api_page_documents_the_public_names(site):
    html = (site / "api.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="(ding_lite[\w.]*)"', html))
    # Every top-level name, documented as ding_lite.<name> or under its defining module.
    undocumented = [
        name for name in ding_lite.__all__ if not any(a.endswith(f".{name}") for a in anchors)
    ]
    assert undocumented == [], f"names of ding_lite.__all__ missing from api.html: {undocumented}"
    for anchor in (
        "ding_lite.serial_pipeline",
        "ding_lite.load_policy",
        "ding_lite.worker.learner.BaseLearner",
        "ding_lite.worker.learner.comm.BaseCommLearner",
        "ding_lite.envs.register_env",
        "ding_lite.rl_utils.gae",
    ):
        assert anchor in anchors, f"api.html has no entry for {anchor}"
    # The docstrings' Google-style sections were turned into fields by napoleon.
    assert "Args:" not in html
