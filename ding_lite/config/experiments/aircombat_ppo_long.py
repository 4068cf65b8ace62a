"""aircombat_ppo for longer, to win with sampled actions: 50M env steps, and the entropy
bonus annealed to 0 with the learning rate, so that the policy that explored early flies
almost deterministically by the end. Target: win >= 95% of 1,000 evaluation episodes with
sampled actions, within 30 minutes on 2 CPU cores.
"""

from ding_lite.config.experiments.aircombat_ppo import config as _base

config = dict(
    _base,
    exp_name="aircombat_ppo_long",
    max_env_step=50_000_000,
    policy=dict(_base["policy"], learn=dict(_base["policy"]["learn"], entropy_anneal=True)),
)
