"""Plain self-play on biased rock-paper-scissors: one policy plays both sides (the two
agents of ``matrix_game``) with ``matrix_league_ppo``'s network, learning rate schedule
and budget, and neither a league nor an anchor. Gradient play against one's current self
circles the equilibrium (1/4, 1/2, 1/4) and runs into a corner instead of reaching it: the
control of the league's figure (docs/league.rst)."""

from ding_lite.config.experiments.matrix_league_ppo import config as _league

_learn = {
    k: v for k, v in _league["policy"]["learn"].items() if not k.startswith("kl_")
}  # fmt: skip
config = dict(
    {k: v for k, v in _league.items() if k != "league"},
    exp_name="matrix_selfplay_ppo",
    # Two agent steps per env step: minibatches twice as large keep their count.
    policy=dict(_league["policy"], learn=dict(_learn, batch_size=256)),
)
