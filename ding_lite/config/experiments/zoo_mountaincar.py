"""Zoo: PPO on MountainCar-v0, 1M env steps (rl-zoo: -110.4).

rl-zoo's settings (16 copies x 16 steps, GAE lambda 0.98, observations and rewards
normalized) with the base's 10 epochs instead of rl-zoo's 4 (tuning seeds 10 and 11: -102.0
and -100.7 against -109.2 and -112.3).
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(task="MountainCar-v0", budget=1_000_000, rl_zoo=-110.4, rl_zoo_task="MountainCar-v0")
changes = dict(
    env=dict(num_envs=16),
    policy=dict(
        model=dict(obs_norm=True),
        learn=dict(reward_scale=True),
        collect=dict(n_steps=16, gae_lambda=0.98),
    ),
)
config = zoo_config("zoo_mountaincar", row, changes)
