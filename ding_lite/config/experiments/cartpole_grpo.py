"""Critic-free PPO on the bundled CartPole: GRPO advantages over groups of 8; 475.

``env.reset_group_size=8`` makes the k-th episode of each of 8 copies start from the same
state, and ``adv_estimator=grpo`` gives every step of an episode its return's distance
from its group's mean return, in units of the group's standard deviation; no value head
(``policy.model.critic=false``). A group is trained on once all 8 of its episodes have
ended; until then its steps are held back. Figures: docs/benchmarks.rst.
"""

config = dict(
    exp_name="cartpole_grpo",
    max_env_step=500_000,
    env=dict(name="cartpole", num_envs=32, reset_group_size=8),
    policy=dict(
        model=dict(hidden_sizes=[64, 64], activation="tanh", critic=False),
        learn=dict(
            adv_estimator="grpo",
            n_epochs=4,
            batch_size=512,
            learning_rate=2.5e-3,
            clip_ratio=0.2,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=64, gamma=1.0),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=2, n_episodes=20, stop_value=475.0, min_train_return=400.0),
)
