"""Fixtures of the docs tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers import extract_blocks


@pytest.fixture
def docs_code() -> Callable[..., str]:
    """``docs_code(page, name)``: the marked Python blocks of a page joined into one script."""

    def get(page: str, name: str) -> str:
        return "\n\n".join(extract_blocks(page, name))

    return get
