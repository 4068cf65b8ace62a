"""PPO with an LSTM on the bundled cartpole that shows positions only; solved at 475.

``env.kwargs.observe=position`` hides both velocities (the cart's and the pole's), so a
feed-forward policy cannot tell which way the pole is falling; the LSTM infers them from
the positions it has seen. 32 copies x 64 steps per iteration, cut into 16-step segments;
observation normalization and reward scaling on (without reward scaling the shared core's
value loss swamps the policy's gradient and nothing is learned). Figures, and the same
settings with ``policy.model.core=none``: docs/benchmarks.rst (``bench/memory.py``).
"""

config = dict(
    exp_name="cartpole_lstm_ppo",
    max_env_step=1_000_000,
    env=dict(name="cartpole", num_envs=32, kwargs=dict(observe="position")),
    policy=dict(
        model=dict(
            hidden_sizes=[64],
            activation="tanh",
            obs_norm=True,
            core="lstm",
            core_size=64,
            share_encoder=True,
        ),
        learn=dict(
            n_epochs=4,
            batch_size=512,
            bptt_horizon=16,
            learning_rate=1e-3,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
            reward_scale=True,
        ),
        collect=dict(n_steps=64, gamma=0.99, gae_lambda=0.95),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=2, n_episodes=20, stop_value=475.0, min_train_return=400.0),
)
