"""A league on biased rock-paper-scissors (``matrix_game``, payoff ``biased_rps``): rock's
win over scissors pays 2, so the equilibrium is (1/4, 1/2, 1/4).

Each episode is one move of both players. Agent 0 is the main player; agent 1 is drawn by
the league: its current self in half the matches, in the other half a frozen snapshot of
it drawn from the pool (fictitious self-play, ``weighting=even``, with the k-th member
weighed k**8: ``recency=8``, so the pool's first, near-uniform members fade without
leaving). A snapshot joins every 5 iterations. The main policy is anchored
to itself as it was up to 50 iterations ago (a KL penalty of 0.5 toward a reference
refreshed every 50 iterations) and its learning rate anneals to 0, so its last policy
settles instead of circling.

The figure is the main policy's exploitability (what a best response gains against its
action probabilities, exactly; 0 at the equilibrium), logged as ``league/exploitability``.
``matrix_selfplay_ppo`` is plain self-play with the same network and budget: it cycles.
docs/league.rst has the figures and what else was tried.
"""

from typing import Any

config: dict[str, Any] = dict(
    exp_name="matrix_league_ppo",
    max_env_step=300_000,
    env=dict(name="matrix_game", num_envs=128, kwargs=dict(payoff="biased_rps")),
    policy=dict(
        model=dict(hidden_sizes=[16], activation="tanh"),
        learn=dict(
            n_epochs=4,
            batch_size=128,
            learning_rate=3e-3,
            lr_anneal=True,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.02,
            grad_clip_norm=0.5,
            kl_coef=0.5,
            kl_ref_update_interval=50,
        ),
        collect=dict(n_steps=4, gamma=0.99, gae_lambda=0.95),
    ),
    league=dict(
        enabled=True,
        shares=dict(self=0.5, pfsp=0.5, check=0.0),
        weighting="even",
        recency=8,
        snapshot_every=5,
    ),
    learner=dict(hook=dict(log_show_after_iter=50)),
    evaluator=dict(eval_freq=0, n_episodes=8),
)
