"""PPO on the bundled torch Pendulum (gymnasium Pendulum-v1's dynamics); target -200."""

config = dict(
    exp_name="pendulum_ppo",
    max_env_step=2_000_000,
    env=dict(name="pendulum", num_envs=64),
    policy=dict(
        model=dict(hidden_sizes=[64, 64], activation="tanh", log_std_init=-0.5),
        learn=dict(
            n_epochs=10,
            batch_size=1024,
            learning_rate=1e-3,
            lr_anneal=False,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=100, gamma=0.95, gae_lambda=0.95),
    ),
    evaluator=dict(eval_freq=5, n_episodes=20, stop_value=-200.0),
)
