"""PPO on any gymnasium env: pass env.name=gym:<id> (default gym:CartPole-v1)."""

config = dict(
    exp_name="gym_ppo",
    max_env_step=1_000_000,
    env=dict(name="gym:CartPole-v1", num_envs=8),
    policy=dict(
        learn=dict(n_epochs=10, batch_size=256, learning_rate=1e-3, entropy_weight=0.0),
        collect=dict(n_steps=128, gamma=0.99, gae_lambda=0.95),
    ),
    evaluator=dict(eval_freq=5, n_episodes=20, stop_value=475.0, min_train_return=400.0),
)
