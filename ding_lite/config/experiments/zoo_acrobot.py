"""Zoo: PPO on Acrobot-v1, 1M env steps (rl-zoo: -73.5).

rl-zoo's settings: 16 copies x 256 steps, 4 epochs, GAE lambda 0.94, observations and
rewards normalized.
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(task="Acrobot-v1", budget=1_000_000, rl_zoo=-73.5, rl_zoo_task="Acrobot-v1")
changes = dict(
    env=dict(num_envs=16),
    policy=dict(
        model=dict(obs_norm=True),
        learn=dict(n_epochs=4, reward_scale=True),
        collect=dict(n_steps=256, gae_lambda=0.94),
    ),
)
config = zoo_config("zoo_acrobot", row, changes)
