"""``ding-lite tune``: Optuna studies over an experiment's settings (docs/tune.rst).

Nothing is imported here, so that the command line stays free of torch and Optuna until a
study runs: :mod:`.command` is the entry point.
"""
