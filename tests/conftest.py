"""Settings every test shares."""

import signal


def pytest_configure(config):
    # A shell without job control starts background commands with SIGINT ignored, and every
    # process the tests start would inherit that: the tests that press Ctrl-C on a run would
    # then test nothing. Handled here, SIGINT reaches the children with its default action.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
