"""Zoo: PPO on Pendulum-v1, 100k env steps (rl-zoo: -172.2).

``pendulum_ppo``'s settings on gymnasium's Pendulum-v1: 16 copies x 256 steps, 10 epochs
of minibatches of 256, learning rate 5e-4, discount 0.9, observations normalized, rewards
scaled.
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(task="Pendulum-v1", budget=100_000, rl_zoo=-172.2, rl_zoo_task="Pendulum-v1")
changes = dict(
    env=dict(num_envs=16),
    policy=dict(
        model=dict(obs_norm=True),
        learn=dict(batch_size=256, learning_rate=5e-4, reward_scale=True),
        collect=dict(n_steps=256, gamma=0.9),
    ),
)
config = zoo_config("zoo_pendulum", row, changes)
