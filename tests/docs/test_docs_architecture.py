"""docs/architecture.rst names only files, folders and objects that exist, and maps every
subpackage, so the "where is X" page cannot drift from the code."""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest
from helpers import DOCS

ROOT = DOCS.parent
PAGE = (DOCS / "architecture.rst").read_text(encoding="utf-8")
PATHS = sorted(set(re.findall(r"``(ding_lite/[^`\s]*)``", PAGE)))
DOTTED = sorted(set(re.findall(r"``(ding_lite(?:\.\w+)+)``", PAGE)))


def resolve(dotted: str) -> Any:
    """Imports the longest module prefix of ``dotted`` and looks the rest up as attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)  # AttributeError: the page names something gone
        return obj
    raise ModuleNotFoundError(dotted)


def test_page_names_enough_to_check():
    assert len(PATHS) >= 20 and len(DOTTED) >= 8, (PATHS, DOTTED)


@pytest.mark.parametrize("path", PATHS)
def test_path_exists(path):
    target = ROOT / path
    if path.endswith("/"):
        assert target.is_dir(), f"docs/architecture.rst names {path}, which is not a folder"
    else:
        assert target.exists(), f"docs/architecture.rst names {path}, which does not exist"


@pytest.mark.parametrize("dotted", DOTTED)
def test_dotted_name_resolves(dotted):
    resolve(dotted)


def test_package_map_lists_every_subpackage():
    package_map = PAGE.split("Package map\n-----------\n", 1)[1].split("\nWhere to find\n", 1)[0]
    subpackages = sorted(p.parent.name for p in (ROOT / "ding_lite").glob("*/__init__.py"))
    listed = re.findall(r"^``ding_lite/(\w+)/``$", package_map, flags=re.M)
    assert sorted(listed) == subpackages
