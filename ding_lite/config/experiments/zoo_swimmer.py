"""Zoo: PPO on Swimmer-v5, 1M env steps (rl-zoo: 281.6 on Swimmer-v3).

rl-zoo's settings: the base (SB3's defaults: one copy x 2048 steps, a constant learning
rate, no value clipping) with a discount of 0.9999, observations normalized and rewards
scaled. A swimmer's progress pays off over hundreds of steps. Tuning seeds 10-12: 122.3,
158.3 and 360.1 (``mujoco_ppo``'s settings with the same discount: 42.2, 138.9 and 66.4 on
seeds 0-2). Needs ``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(
    task="Swimmer-v5",
    budget=1_000_000,
    rl_zoo=281.6,
    rl_zoo_task="Swimmer-v3",
)
changes = dict(
    policy=dict(
        model=dict(obs_norm=True),
        learn=dict(reward_scale=True),
        collect=dict(gamma=0.9999),
    ),
)
config = zoo_config("zoo_swimmer", row, changes)
