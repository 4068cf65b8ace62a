"""``matrix_game``: one move an episode, each side's reward and outcome, the payoff checked."""

from __future__ import annotations

import pytest
import torch

from ding_lite.envs import create_env, list_envs
from ding_lite.envs.matrix_game import PAYOFFS
from ding_lite.league.matrix import exploitability

ROCK, PAPER, SCISSORS = 0, 1, 2


def test_every_step_is_a_whole_game_scored_from_both_sides():
    env = create_env("matrix_game", 4)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 2, 1) and bool((obs == 1).all())
    action = torch.tensor([[ROCK, SCISSORS], [SCISSORS, ROCK], [PAPER, ROCK], [ROCK, ROCK]])
    obs, reward, terminated, truncated, info = env.step(action)
    assert reward.tolist() == [[2.0, -2.0], [-2.0, 2.0], [1.0, -1.0], [0.0, 0.0]]
    assert terminated.all() and not truncated.any() and info["episode"]["mask"].all()
    assert info["episode"]["outcome"].tolist() == [[1, -1], [-1, 1], [1, -1], [0, 0]]
    assert info["episode"]["return"].tolist() == reward.tolist()
    assert "matrix_game" in list_envs()


def test_the_bundled_payoffs_have_the_documented_equilibria():
    assert exploitability(PAYOFFS["biased_rps"], [0.25, 0.5, 0.25]) == pytest.approx(0.0)
    assert exploitability(PAYOFFS["biased_rps"], [1, 1, 1]) == pytest.approx(1 / 3)
    assert exploitability(PAYOFFS["rps"], [1, 1, 1]) == pytest.approx(0.0)


@pytest.mark.parametrize(
    "payoff, says",
    [("chess", "unknown payoff 'chess'"), ([[0, 1], [1, 0]], "zero-sum symmetric"), (3, "a name")],
)
def test_a_bad_payoff_is_one_line(payoff, says):
    with pytest.raises(ValueError, match=says):
        create_env("matrix_game", 2, payoff=payoff)
