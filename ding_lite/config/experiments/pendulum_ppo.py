"""PPO on the bundled torch Pendulum (gymnasium Pendulum-v1's dynamics); target -200.

Observation normalization and reward scaling on, discount 0.9 (a swing-up needs no longer
horizon), 16 copies x 256 steps per iteration, 16 minibatches of 256 for 10 epochs, and an
evaluation every 2 iterations (8,192 env steps). Seeds 0-9 all reached -200 within
172,032 env steps (docs/benchmarks.rst).
"""

config = dict(
    exp_name="pendulum_ppo",
    max_env_step=500_000,
    env=dict(name="pendulum", num_envs=16),
    policy=dict(
        model=dict(hidden_sizes=[64, 64], activation="tanh", log_std_init=0.0, obs_norm=True),
        learn=dict(
            n_epochs=10,
            batch_size=256,
            learning_rate=5e-4,
            lr_anneal=False,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
            reward_scale=True,
        ),
        collect=dict(n_steps=256, gamma=0.9, gae_lambda=0.95),
    ),
    evaluator=dict(eval_freq=2, n_episodes=20, stop_value=-200.0),
)
