"""Settings every test shares."""

import signal
import sys

import pytest


def pytest_configure(config):
    # A shell without job control starts background commands with SIGINT ignored, and every
    # process the tests start would inherit that: the tests that press Ctrl-C on a run would
    # then test nothing. Handled here, SIGINT reaches the children with its default action.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def no_box2d(monkeypatch):
    """Box2D as if it were not installed (it is a test dependency): importing it fails, and
    gymnasium's Box2D envs are imported afresh, so they raise DependencyNotInstalled."""

    monkeypatch.setitem(sys.modules, "Box2D", None)
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)
