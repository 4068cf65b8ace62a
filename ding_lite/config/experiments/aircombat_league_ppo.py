"""A league on the air-combat env: the main policy never meets CrankAgent in training.

``aircombat_selfplay_ppo``'s env and settings (no survival bonus, a draw costs 0.25,
entropy weight 0.001), with five more features in the observation
(``env.kwargs.observe="stock"``: an enemy missile within the warner's 20 km, the nearest
enemy missile's proximity and bearing, the share of the own missiles in flight, and the
enemy's missiles left), and agent 1 of most copies played by the league instead of the
policy itself: 35% of the copies (90 of 256) are mirror copies, where the main policy
flies both fighters and learns from both as plain self-play does (``league.mirror``); on
the others it meets a frozen snapshot drawn by PFSP (50% of matches) or uniformly (15%). A
main exploiter (trained only against the current main policy) and a league exploiter
(against the pool) train beside it, each joining the pool once it wins 70% of its recent
matches, or after 60 iterations, and starting over. A snapshot of the main policy joins
every 20 iterations (327,680 env steps).

With them the main policy won 92.1% of 1,000 matches against CrankAgent at the median of
seeds 7-9 (not tuned on; 38-39 minutes of training each on 2 cores, four at once), and
96.2% head to head against ``aircombat_selfplay_ppo``; over all eight seeds run with these
settings (0, 7-13), 89.8% and 96.1%. With the four missile features and not the enemy's
stock, 89.6% at the median of seeds 1-3, and on two of them two thirds of the matches
against the self-play policy ended undecided, both sides having fired all four missiles.
Without any of them the league's policy fired its salvo from beyond 40 km, which no member
of its pool (none seeing a missile) punished, and CrankAgent, which turns away from the
missiles it sees, outran it: 55.4%. Without the mirror copies (the main player learning
from agent 0 only) the seeds it was not tuned on ended at 24.7% and 6.6% against
CrankAgent (docs/league.rst).

``max_env_step`` counts the main player's env steps; each exploiter steps as many again.
The evaluation plays the scripted CrankAgent, as for self-play: the win rate against it is
the figure (docs/league.rst).
"""

from ding_lite.config.experiments.aircombat_selfplay_ppo import config as _selfplay

config = dict(
    _selfplay,
    exp_name="aircombat_league_ppo",
    env=dict(_selfplay["env"], kwargs=dict(_selfplay["env"]["kwargs"], observe="stock")),
    max_env_step=12_000_000,
    league=dict(
        enabled=True,
        mirror=True,
        snapshot_every=20,
        main_exploiters=1,
        league_exploiters=1,
        exploiter_max_iters=60,
    ),
)
