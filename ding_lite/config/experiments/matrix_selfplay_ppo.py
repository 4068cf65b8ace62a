"""Plain self-play on biased rock-paper-scissors: one policy plays both sides (the two
agents of ``matrix_game``), with ``matrix_league_ppo``'s settings and no league. Gradient
play against one's current self cycles around the equilibrium (1/4, 1/2, 1/4) instead of
reaching it: the control of the league's figure."""

from ding_lite.config.experiments.matrix_league_ppo import config as _league

config = dict(
    {k: v for k, v in _league.items() if k != "league"},
    exp_name="matrix_selfplay_ppo",
    # Two agent steps per env step: minibatches twice as large keep their count.
    policy=dict(
        _league["policy"],
        learn=dict(_league["policy"]["learn"], batch_size=256),
    ),
)
