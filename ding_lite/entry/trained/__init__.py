"""Tools for a trained policy, apart from the pipelines that train it.

:mod:`.predict` (``load_policy(path).predict(obs)``), :mod:`.evaluate` (``ding-lite eval``),
:mod:`.render` (``ding-lite render``), :mod:`.ppo_agent` (the ``"ppo"`` air-combat agent),
and :mod:`.run_paths`, which turns a run dir or checkpoint path into the files they read.
"""
