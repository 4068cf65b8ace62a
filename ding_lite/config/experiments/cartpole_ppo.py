"""PPO on the bundled torch CartPole (gymnasium CartPole-v1's dynamics); solved at 475."""

from typing import Any

config: dict[str, Any] = dict(
    exp_name="cartpole_ppo",
    max_env_step=500_000,
    env=dict(name="cartpole", num_envs=32),
    policy=dict(
        model=dict(hidden_sizes=[64, 64], activation="tanh"),
        learn=dict(
            n_epochs=4,
            batch_size=512,
            learning_rate=2.5e-3,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=64, gamma=0.99, gae_lambda=0.95),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=2, n_episodes=20, stop_value=475.0, min_train_return=400.0),
)
