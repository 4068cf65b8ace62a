"""Zoo: PPO on MountainCarContinuous-v0, 20k env steps (rl-zoo: 88.3).

rl-zoo's settings: 1 copy x 8 steps, 10 epochs, learning rate 7.77e-5, entropy 0.00429,
clip 0.1, GAE lambda 0.9, discount 0.9999, gradient norm 5, value weight 0.19, log-std
-3.29, no orthogonal init, observations and rewards normalized, and state-dependent
exploration (gSDE) drawn anew every 8 steps (each rollout).
"""

from ding_lite.config.zoo import ZooRow, zoo_config

row = ZooRow(
    task="MountainCarContinuous-v0",
    budget=20_000,
    rl_zoo=88.3,
    rl_zoo_task="MountainCarContinuous-v0",
)
changes = dict(
    policy=dict(
        model=dict(
            log_std_init=-3.29, ortho_init=False, obs_norm=True, sde=True, sde_sample_freq=8
        ),
        learn=dict(
            batch_size=8,
            learning_rate=7.77e-5,
            entropy_weight=0.00429,
            clip_ratio=0.1,
            grad_clip_norm=5.0,
            value_weight=0.19,
            reward_scale=True,
        ),
        collect=dict(n_steps=8, gamma=0.9999, gae_lambda=0.9),
    ),
)
config = zoo_config("zoo_mountaincar_continuous", row, changes)
