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

from ding_lite.config.experiments.aircombat_ppo import config as _against_crank

_learn = _against_crank["policy"]["learn"]
config = dict(
    _against_crank,
    exp_name="aircombat_selfplay_ppo",
    env=dict(
        _against_crank["env"],
        kwargs=dict(_against_crank["env"]["kwargs"], opponent="self"),
    ),
    # Two agent steps per env step: minibatches twice as large keep their count.
    policy=dict(_against_crank["policy"], learn=dict(_learn, batch_size=2 * _learn["batch_size"])),
    evaluator=dict(
        _against_crank["evaluator"], env_kwargs=dict(opponent="rule_based", reward="shaped")
    ),
)
