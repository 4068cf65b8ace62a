"""Zoo: PPO on Pendulum-v1, 100k env steps (rl-zoo: -172.2).

rl-zoo's settings: 4 copies x 1024 steps, 10 epochs of minibatches of 64, learning rate
1e-3, discount 0.9, state-dependent exploration (gSDE, a new noise matrix every 4 steps),
nothing normalized. Tuned on seeds 10-14: -137.5, -128.5, -149.7, -144.1, -133.6; with
``pendulum_ppo``'s batches (16 copies x 256 steps, minibatches of 256, learning rate 5e-4,
normalization) and gSDE, seeds 0-2 gave -173.1, -191.9 and -193.8.
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(task="Pendulum-v1", budget=100_000, rl_zoo=-172.2, rl_zoo_task="Pendulum-v1")
changes = dict(
    env=dict(num_envs=4),
    policy=dict(
        model=dict(sde=True),
        learn=dict(learning_rate=1e-3),
        collect=dict(n_steps=1024, gamma=0.9),
    ),
)
config = zoo_config("zoo_pendulum", row, changes)
