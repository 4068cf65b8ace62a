"""Zoo: PPO on LunarLander-v3, 1M env steps (rl-zoo: 242.1 on LunarLander-v2).

rl-zoo's settings: 16 copies x 1,024 steps, minibatches of 64, 4 epochs, GAE lambda
0.98, discount 0.999, entropy 0.01. Needs ``pip install -e '.[box2d]'``.
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(
    task="LunarLander-v3",
    budget=1_000_000,
    rl_zoo=242.1,
    rl_zoo_task="LunarLander-v2",
)
changes = dict(
    env=dict(num_envs=16),
    policy=dict(
        learn=dict(n_epochs=4, entropy_weight=0.01),
        collect=dict(n_steps=1024, gamma=0.999, gae_lambda=0.98),
    ),
)
config = zoo_config("zoo_lunarlander", row, changes)
