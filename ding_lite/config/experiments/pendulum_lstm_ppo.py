"""PPO with an LSTM on the bundled pendulum without its angular velocity; target -250.

``env.kwargs.observe=position`` leaves the angle's cosine and sine only, so the policy must
infer how fast the pendulum swings from the angles it has seen. pendulum_ppo's settings of
before 2026-11-27 otherwise (16 copies x 256 steps, discount 0.9, observation normalization
and reward scaling), with a 64-unit LSTM after one 64-unit layer for the actor and another for the
critic (``share_encoder`` is off), trained on 64-step segments, 16 to a minibatch. Tuned on
seeds 10-14: one trunk for both, 16-step segments or minibatches of 256 rows solved 1 or
2 of the 4-5 seeds tried; this solves 4 of 5. Figures beside the feed-forward policy's:
docs/benchmarks.rst (``bench/memory.py``).
"""

config = dict(
    exp_name="pendulum_lstm_ppo",
    max_env_step=500_000,
    env=dict(name="pendulum", num_envs=16, kwargs=dict(observe="position")),
    policy=dict(
        model=dict(
            hidden_sizes=[64],
            activation="tanh",
            log_std_init=0.0,
            obs_norm=True,
            core="lstm",
            core_size=64,
        ),
        learn=dict(
            n_epochs=10,
            batch_size=1024,
            bptt_horizon=64,
            learning_rate=5e-4,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
            reward_scale=True,
        ),
        collect=dict(n_steps=256, gamma=0.9, gae_lambda=0.95),
    ),
    evaluator=dict(eval_freq=2, n_episodes=20, stop_value=-250.0),
)
