"""Tools for a trained policy, apart from the pipelines that train it.

:mod:`.predict` (``load_policy(path).predict(obs)``), :mod:`.evaluate` (``ding-lite eval``),
:mod:`.render` (``ding-lite render``), :mod:`.video` (``ding-lite render --video``),
:mod:`.ppo_agent` (the ``"ppo"`` air-combat agent), and :mod:`.run_paths`, which turns a run
dir or checkpoint path into the files they read.

This package is the one place that registers the ``"ppo"`` agent (``opponent=ppo``): the envs
never import policy code, so whatever may build an env with that opponent imports something
of this package (its tools, the serial pipeline's ``TrainedRun``, a worker process).
"""

from ding_lite.entry.trained.ppo_agent import PPOAgent
from ding_lite.envs.aircombat.agents import register_agent

register_agent("ppo", PPOAgent)
