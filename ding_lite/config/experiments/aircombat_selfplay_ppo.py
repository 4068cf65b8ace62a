"""Self-play on the air-combat env: both fighters flown by the policy being trained.

``env.kwargs.opponent=self`` makes every copy a two-agent match (``num_agents=2``): blue and
red each see their own observation and reward, and one shared policy acts for both, so
every env step gives two agent steps. aircombat_ppo's settings otherwise (256 copies, a
hybrid rudder/fire action, throttle fixed at full), for 8M env steps instead of 25M (the
win rate against CrankAgent levels off by 2-5M), with three changes for self-play:

- no survival bonus (``env.kwargs.survival_reward=0``): with it two copies of one policy
  settled into a truce, both holding fire to collect it;
- a draw costs each side 0.25 (``env.kwargs.draw_reward=-0.25``): without it the policy
  learned to fire its missiles at once and flee, and two fleeing copies draw nine matches
  in ten; a fleeing policy loses to CrankAgent, which waits, evades and chases;
- a smaller entropy bonus (0.001), without which the policy drifted back toward random
  firing once matches were even.

The evaluation plays the scripted CrankAgent instead (``evaluator.env_kwargs``: the
default survival bonus and no draw cost, so that returns compare with aircombat_ppo's), as
``ding-lite eval`` does with this config: the win rate against it is the figure. Target:
win >= 60% of 1,000 sampled episodes against CrankAgent (docs/benchmarks.rst).
"""

from typing import Any

from ding_lite.config.experiments.aircombat_ppo import config as _against_crank

_learn = _against_crank["policy"]["learn"]
config: dict[str, Any] = dict(
    _against_crank,
    exp_name="aircombat_selfplay_ppo",
    max_env_step=8_000_000,
    env=dict(
        _against_crank["env"],
        kwargs=dict(
            _against_crank["env"]["kwargs"],
            opponent="self",
            survival_reward=0.0,
            draw_reward=-0.25,
        ),
    ),
    # Two agent steps per env step: minibatches twice as large keep their count.
    policy=dict(
        _against_crank["policy"],
        learn=dict(_learn, batch_size=2 * _learn["batch_size"], entropy_weight=0.001),
    ),
    evaluator=dict(
        _against_crank["evaluator"],
        # aircombat_ppo's env (None: the default survival bonus), so that evaluation
        # returns compare with its.
        env_kwargs=dict(
            opponent="rule_based", reward="shaped", survival_reward=None, draw_reward=0.0
        ),
    ),
)
