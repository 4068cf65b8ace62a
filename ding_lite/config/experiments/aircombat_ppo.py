"""Hybrid-action PPO on the air-combat env against the scripted CrankAgent.

P1 learns rudder (tanh-squashed Gaussian) and fire (a two-way categorical, i.e. a
Bernoulli); its throttle is fixed at full (``env.kwargs.throttle=null`` lets it learn that
too). Target: win >= 60% of the evaluation episodes, within 15 minutes on 2 CPU cores.
"""

from typing import Any

config: dict[str, Any] = dict(
    exp_name="aircombat_ppo",
    max_env_step=25_000_000,
    env=dict(
        name="aircombat",
        num_envs=256,
        kwargs=dict(opponent="rule_based", reward="shaped", throttle=1.0),
    ),
    policy=dict(
        model=dict(hidden_sizes=[128, 64], activation="relu", log_std_init=-0.5),
        learn=dict(
            n_epochs=4,
            batch_size=4096,
            learning_rate=1e-3,
            lr_anneal=True,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=64, gamma=0.995, gae_lambda=0.95),
        # Evaluate the stochastic policy: its fire head is a per-step launch probability,
        # and its argmax flips between "never fire" and "always fire" from one iteration to
        # the next (see docs/aircombat.rst).
        eval=dict(deterministic=False),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=40, n_episodes=200, stop_value=None),
)
