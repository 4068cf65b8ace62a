"""A league on biased rock-paper-scissors (``matrix_game``, payoff ``biased_rps``): rock's
win over scissors pays 2, so the equilibrium is (1/4, 1/2, 1/4).

Each episode is one move of both players. Agent 0 is the main player; agent 1 is drawn by
the league: its current self (35%), a frozen snapshot by PFSP (50%) or any snapshot (15%).
Two exploiters train beside it, one against the current main player, one against the
pool; each joins the pool when it wins 70% of its recent matches, or after 30 iterations,
and starts over. A snapshot of the main player joins every 5 iterations.

The figure is the main policy's exploitability (what a best response gains against its
action probabilities, exactly; 0 at the equilibrium), logged as ``league/exploitability``.
``matrix_selfplay_ppo`` is the same without the league: plain self-play, which cycles.
"""

config = dict(
    exp_name="matrix_league_ppo",
    max_env_step=300_000,
    env=dict(name="matrix_game", num_envs=128, kwargs=dict(payoff="biased_rps")),
    policy=dict(
        model=dict(hidden_sizes=[16], activation="tanh"),
        learn=dict(
            n_epochs=4,
            batch_size=128,
            learning_rate=3e-3,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=4, gamma=0.99, gae_lambda=0.95),
    ),
    league=dict(
        enabled=True,
        snapshot_every=5,
        main_exploiters=1,
        league_exploiters=1,
        exploiter_max_iters=30,
    ),
    learner=dict(hook=dict(log_show_after_iter=50)),
    evaluator=dict(eval_freq=0, n_episodes=8),
)
