"""Sphinx configuration of the ding_lite docs: ``sphinx-build -W -b html docs docs/_build``."""

from __future__ import annotations

import sys
from pathlib import Path

# The docs describe the checkout they sit in, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "ding_lite"
author = "the ding_lite authors"
copyright = "the ding_lite authors"  # noqa: A001 (Sphinx reads this name)
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
# No intersphinx: CI builds without network access.

exclude_patterns = ["_build", "examples", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_theme = "furo"
html_title = "ding_lite"

# The code's docstrings are Google style.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# "Attributes:" sections as fields: a NamedTuple's fields are then described once, not twice.
napoleon_use_ivar = True

autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
# Class docstring plus __init__'s, so constructor arguments are documented once.
autoclass_content = "both"
nitpicky = False
