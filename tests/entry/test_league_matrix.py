"""Issue 41, acceptance 1, on biased rock-paper-scissors: the league's main policy ends far
closer to the equilibrium than plain self-play, which runs into a corner. Both figures are
computed exactly from the final policies' action probabilities.

The issue's target is an exploitability of at most 0.05 for the league at the
experiments' budget; docs/league.rst has the figures over untuned seeds (median 0.040).
This test guards the mechanism on a third of that budget (the learning rate anneals over
it), with room for another machine's float order: the league below 0.15, plain self-play
above 0.2 (seed 3: 0.040 against 1.75). bench/league_matrix.py gives the figures of the
full budget over several seeds.
"""

from __future__ import annotations

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.envs.matrix_game import PAYOFFS
from ding_lite.league.matrix import exploitability
from ding_lite.worker.learner.league_desk import action_probs

SEED = 3  # not one the settings were tuned on (0 and 1); the worst league figure measured
BUDGET = 100_000  # env steps, a third of the experiments' (the suite's time is bounded)


def _final_gap(experiment: str, tmp_path) -> tuple[list[float], float]:
    run = serial_pipeline(
        experiment, seed=SEED, exp_dir=str(tmp_path / experiment), max_env_step=BUDGET, verbose=0
    )
    probs = action_probs(run.model, torch.ones(1, 1))
    return probs, exploitability(PAYOFFS["biased_rps"], probs)


@pytest.fixture
def one_thread():
    """A 16-unit network: a second torch thread only adds hand-offs (and under ``-n 2``
    two workers' threads would share two cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_league_ends_near_the_equilibrium_where_plain_self_play_does_not(tmp_path, one_thread):
    league_probs, league_gap = _final_gap("matrix_league_ppo", tmp_path)
    selfplay_probs, selfplay_gap = _final_gap("matrix_selfplay_ppo", tmp_path)
    assert league_gap <= 0.15, league_probs
    assert selfplay_gap > 0.2, selfplay_probs
    # The league's own figure (table.json, status.json, tensorboard) is the exact one.
    logged = (tmp_path / "matrix_league_ppo" / "league" / "table.json").read_text()
    assert f'"exploitability": {league_gap}' in logged
