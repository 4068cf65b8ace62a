"""Critic-free PPO on the bundled CartPole: REINFORCE++ advantages, no value head; 475.

Each step's advantage is its discounted return-to-go, standardized over the batch
(``adv_estimator=reinforce_pp``); ``policy.model.critic=false`` builds no value network.
Advantages need whole episodes, so the learner holds back the steps of episodes that have
not ended and trains on them in a later iteration. Figures: docs/benchmarks.rst.
"""

config = dict(
    exp_name="cartpole_reinforce_pp",
    max_env_step=500_000,
    env=dict(name="cartpole", num_envs=32),
    policy=dict(
        model=dict(hidden_sizes=[64, 64], activation="tanh", critic=False),
        learn=dict(
            adv_estimator="reinforce_pp",
            n_epochs=4,
            batch_size=512,
            learning_rate=2.5e-3,
            clip_ratio=0.2,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=64, gamma=0.99),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=2, n_episodes=20, stop_value=475.0, min_train_return=400.0),
)
