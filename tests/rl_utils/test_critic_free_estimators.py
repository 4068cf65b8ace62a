"""The critic-free estimators against hand-computed values and plain loops."""

from __future__ import annotations

import math

import pytest
import torch

from ding_lite.rl_utils import get_adv_estimator, list_adv_estimators
from ding_lite.rl_utils.critic_free import grpo, reinforce_pp, returns_to_go, rloo


def _stream(episodes: list[list[float]], keys: list[int]) -> tuple[torch.Tensor, ...]:
    """Episodes' rewards laid end to end, with dones and each step's group key."""
    rewards = torch.tensor([r for ep in episodes for r in ep])
    dones = torch.tensor([i == len(ep) - 1 for ep in episodes for i in range(len(ep))])
    groups = torch.tensor([k for ep, k in zip(episodes, keys, strict=True) for _ in ep])
    return rewards, dones, groups


def test_the_critic_free_estimators_are_registered_as_episodic():
    assert {"reinforce_pp", "grpo", "rloo"} <= set(list_adv_estimators())
    assert get_adv_estimator("reinforce_pp").episodic
    assert not get_adv_estimator("reinforce_pp").grouped
    assert get_adv_estimator("grpo").grouped and get_adv_estimator("rloo").grouped
    assert not get_adv_estimator("gae").episodic


def test_reinforce_pp_is_the_standardized_discounted_return_of_a_plain_loop():
    episodes = [[1.0, 0.0, 2.0], [0.5], [3.0, -1.0, 0.0, 1.0]]
    rewards, dones, groups = _stream(episodes, [0, 1, 2])
    gamma = 0.9
    expected = []
    for ep in episodes:
        running, out = 0.0, []
        for r in reversed(ep):
            running = r + gamma * running
            out.append(running)
        expected.extend(reversed(out))
    expected = torch.tensor(expected)
    adv, ret = reinforce_pp(rewards, dones, groups, gamma)
    torch.testing.assert_close(ret, expected)
    torch.testing.assert_close(adv, (expected - expected.mean()) / (expected.std() + 1e-6))
    centred, _ = reinforce_pp(rewards, dones, groups, gamma, norm_by_std=False)
    torch.testing.assert_close(centred, expected - expected.mean())


def test_grpo_on_a_hand_built_group():
    # Group 7: returns 3, 1, 5 (mean 3, std 2); group 9: returns 4 and 4 (std 0).
    episodes = [[1.0, 2.0], [1.0], [2.0, 2.0, 1.0], [4.0], [2.0, 2.0]]
    rewards, dones, groups = _stream(episodes, [7, 7, 7, 9, 9])
    adv, ret = grpo(rewards, dones, groups, 1.0)
    per_episode = [0.0, -1.0, 1.0, 0.0, 0.0]  # (R - 3) / 2; group 9: 0 / (0 + eps)
    expected = [a for ep, a in zip(episodes, per_episode, strict=True) for _ in ep]
    torch.testing.assert_close(adv, torch.tensor(expected), atol=1e-5, rtol=0)
    torch.testing.assert_close(ret, returns_to_go(rewards, dones, 1.0))
    plain, _ = grpo(rewards, dones, groups, 1.0, norm_by_std=False)
    expected = [a for ep, a in zip(episodes, [0.0, -2.0, 2.0, 0.0, 0.0], strict=True) for _ in ep]
    torch.testing.assert_close(plain, torch.tensor(expected))


def test_rloo_on_a_hand_built_group():
    # Returns 3, 1, 5 in one group: baselines (1 + 5) / 2 = 3, (3 + 5) / 2 = 4, (3 + 1) / 2 = 2.
    episodes = [[1.0, 2.0], [1.0], [2.0, 2.0, 1.0], [6.0]]
    rewards, dones, groups = _stream(episodes, [0, 0, 0, 1])
    adv, _ = rloo(rewards, dones, groups, 0.99)
    per_episode = [0.0, -3.0, 3.0, 0.0]  # the lone episode of group 1: nothing to compare
    expected = [a for ep, a in zip(episodes, per_episode, strict=True) for _ in ep]
    torch.testing.assert_close(adv, torch.tensor(expected))


def test_an_unfinished_stream_is_refused():
    rewards = torch.ones(3)
    with pytest.raises(ValueError, match="whole episodes"):
        grpo(rewards, torch.tensor([True, False, False]), torch.zeros(3, dtype=torch.long), 1.0)


def test_discounting_stays_inside_each_episode():
    rewards, dones, _ = _stream([[1.0, 1.0], [1.0, 1.0, 1.0]], [0, 1])
    got = returns_to_go(rewards, dones, 0.5).tolist()
    assert got == [1.5, 1.0, 1.75, 1.5, 1.0]
    assert not any(math.isnan(x) for x in got)
