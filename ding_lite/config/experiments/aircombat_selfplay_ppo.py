"""Self-play on the air-combat env: both fighters flown by the policy being trained.

``env.kwargs.opponent=self`` makes every copy a two-agent match (``num_agents=2``): blue and
red each see their own observation and reward, and one shared policy acts for both, so
every env step gives two agent steps. aircombat_ppo's settings otherwise (256 copies, a
hybrid rudder/fire action, throttle fixed at full). The evaluation plays the scripted
CrankAgent instead (``evaluator.env_kwargs``), as ``ding-lite eval`` does with this config:
the win rate against it is the figure. Not yet at the 60% target (docs/benchmarks.rst): seed
0 peaked at 46% near 5M env steps (best.pt: 45.5% of 1,000 episodes), then both sides
stopped fighting to collect the survival bonus and it fell to 0%; with
``reward=zero_sum`` (no truce pays) neither side ever learned to fire (0% by 1.3M).
"""

config = dict(
    exp_name="aircombat_selfplay_ppo",
    max_env_step=25_000_000,
    env=dict(
        name="aircombat",
        num_envs=256,
        kwargs=dict(opponent="self", reward="shaped", throttle=1.0),
    ),
    policy=dict(
        model=dict(hidden_sizes=[128, 64], activation="relu", log_std_init=-0.5),
        learn=dict(
            n_epochs=4,
            batch_size=8192,
            learning_rate=1e-3,
            lr_anneal=True,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=64, gamma=0.995, gae_lambda=0.95),
        eval=dict(deterministic=False),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(
        eval_freq=40,
        n_episodes=200,
        stop_value=None,
        env_kwargs=dict(opponent="rule_based", reward="shaped"),
    ),
)
