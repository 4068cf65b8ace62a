"""The ``hosts`` fixture: test hosts in network namespaces (see hosts.py), checked and
removed at teardown.

Where namespaces cannot be made (not root, no iproute2) these tests skip, unless
``DING_LITE_REQUIRE_HOSTS=1`` (set by .ci/run) makes them fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from hosts import TestHosts, can_make_hosts, nothing_left


@pytest.fixture
def hosts() -> Iterator[Callable[..., TestHosts]]:
    """``hosts("a", "b", ...)`` makes those hosts (10.0.0.1, 10.0.0.2, ...); every set made
    is removed at teardown, and anything left of it fails the test."""
    why = can_make_hosts()
    if why:
        if os.environ.get("DING_LITE_REQUIRE_HOSTS") == "1":
            pytest.fail(f"DING_LITE_REQUIRE_HOSTS=1 but {why}")
        pytest.skip(why)
    made: list[TestHosts] = []

    def make(*names: str) -> TestHosts:
        made.append(TestHosts(names))
        return made[-1]

    yield make
    problems = []
    for test_hosts in made:
        problems += test_hosts.close()
        problems += [f"left behind: {n}" for n in nothing_left(test_hosts.prefix)]
    assert not problems, "teardown: " + "; ".join(problems)
