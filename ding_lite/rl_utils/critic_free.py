"""Critic-free advantage estimators: REINFORCE++, GRPO and RLOO, over whole episodes.

These estimators need no value network: an action's advantage comes from the returns of the
episodes themselves. They are *episode-level* (registered with ``episodic=True``): their
input is whole episodes laid end to end in one stream of M steps, each step tagged with the
key of its episode's group (episodes of one key started from the same state, see
``env.reset_group_size``), and they return one advantage and one return per step. The
learner's advantage step (``ding_lite.policy.ppo.advantages``) holds back the steps of unfinished
episodes and of groups still waiting for a member, so the estimators only ever see
complete groups.

Signature of an episodic estimator (:data:`EpisodicFn`)::

    fn(rewards, dones, groups, gamma, *, norm_by_std) -> (advantages, returns)

with ``rewards`` float [M], ``dones`` bool [M] (True on each episode's last step, so
``dones[-1]`` is True), ``groups`` int64 [M] (equal within an episode) and the returns being
each step's discounted return-to-go (the value target, should a critic be trained beside).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

EpisodicFn = Callable[..., tuple[Tensor, Tensor]]
"""``fn(rewards, dones, groups, gamma, *, norm_by_std) -> (advantages, returns)``."""

EPS = 1e-6
"""Added to a standard deviation before dividing by it."""


def episode_index(dones: Tensor) -> Tensor:
    """Each step's episode number (0, 1, ...) in a stream of whole episodes.

    Args:
        dones: bool [M], True on each episode's last step.

    Returns:
        int64 [M]: the number of episodes that ended before the step's own.
    """
    ended = dones.long()
    return torch.cumsum(ended, 0) - ended


def returns_to_go(rewards: Tensor, dones: Tensor, gamma: float) -> Tensor:
    """Discounted return-to-go of every step, within its episode:
    ``G_t = r_t + gamma * G_{t+1}``, with ``G = r`` on an episode's last step.

    The episodes are laid out as the columns of a padded [longest, episodes] table, so the
    backward recursion runs once per step of the longest episode, for all episodes at once.

    Args:
        rewards: float [M], whole episodes end to end.
        dones: bool [M], True on each episode's last step (``dones[-1]`` must be True).
        gamma: Discount factor.

    Returns:
        float [M], dtype of ``rewards``.

    Raises:
        ValueError: the stream does not end with a finished episode, or shapes differ.
    """
    _check_stream(rewards, dones)
    if rewards.numel() == 0:
        return rewards.clone()
    episode = episode_index(dones)
    starts = torch.nonzero(torch.cat((dones.new_ones(1), dones[:-1]))).squeeze(1)
    position = torch.arange(rewards.shape[0], device=rewards.device) - starts[episode]
    table = rewards.new_zeros(int(position.max()) + 1, starts.shape[0])
    table[position, episode] = rewards
    # Past an episode's end the table holds zeros, so each column's recursion starts at 0.
    for t in range(table.shape[0] - 2, -1, -1):
        table[t].add_(table[t + 1], alpha=gamma)
    return table[position, episode]


def episode_returns(rewards: Tensor, dones: Tensor) -> tuple[Tensor, Tensor]:
    """The undiscounted return of each episode, and each step's episode number.

    Returns:
        ``(returns [E], episode [M])``.
    """
    _check_stream(rewards, dones)
    episode = episode_index(dones)
    totals = rewards.new_zeros(int(dones.sum()))
    return totals.index_add_(0, episode, rewards), episode


def _group_stats(
    values: Tensor, keys: Tensor, ones: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Per-element sum, count and sum of squares over the elements sharing its key (the
    count adds up ``ones``, 1 per element unless given)."""
    _, inverse = torch.unique(keys, return_inverse=True)
    n = int(inverse.max()) + 1 if inverse.numel() else 0
    sums = values.new_zeros(n).index_add_(0, inverse, values)
    squares = values.new_zeros(n).index_add_(0, inverse, values * values)
    ones = torch.ones_like(values) if ones is None else ones
    counts = values.new_zeros(n).index_add_(0, inverse, ones)
    return sums[inverse], counts[inverse], squares[inverse]


def reinforce_pp(
    rewards: Tensor, dones: Tensor, groups: Tensor, gamma: float, *, norm_by_std: bool = True
) -> tuple[Tensor, Tensor]:
    """REINFORCE++ (as in verl): each step's discounted return-to-go, standardized over the
    whole batch (``(G - mean) / (std + eps)``; only centred without ``norm_by_std``).
    Groups are not used: every episode stands alone."""
    del groups
    returns = returns_to_go(rewards, dones, gamma)
    adv = returns - returns.mean()
    if norm_by_std and returns.numel() > 1:
        adv = adv / (returns.std() + EPS)
    return adv, returns


def _per_episode(
    rewards: Tensor, dones: Tensor, groups: Tensor, gamma: float
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """What GRPO and RLOO share: episode returns, each episode's group sum, size and sum
    of squares, the steps' episode numbers and the returns-to-go."""
    totals, episode = episode_returns(rewards, dones)
    last = torch.nonzero(dones).squeeze(1)  # each episode's last step, in episode order
    sums, counts, squares = _group_stats(totals, groups[last])
    return totals, sums, counts, squares, episode, returns_to_go(rewards, dones, gamma)


def grpo(
    rewards: Tensor, dones: Tensor, groups: Tensor, gamma: float, *, norm_by_std: bool = True
) -> tuple[Tensor, Tensor]:
    """GRPO's outcome advantage: an episode's (undiscounted) return minus the mean return of
    its group, divided by the group's standard deviation (Bessel-corrected, plus ``eps``)
    unless ``norm_by_std`` is False; every step of the episode gets its episode's value.
    An episode alone in its group gets 0 (it has nothing to be compared with)."""
    totals, sums, counts, squares, episode, returns = _per_episode(rewards, dones, groups, gamma)
    mean = sums / counts
    adv = totals - mean
    if norm_by_std:
        var = (squares - counts * mean * mean).clamp_min(0.0) / (counts - 1).clamp_min(1.0)
        adv = adv / (var.sqrt() + EPS)
    adv = torch.where(counts > 1, adv, torch.zeros_like(adv))
    return adv[episode], returns


def rloo(
    rewards: Tensor, dones: Tensor, groups: Tensor, gamma: float, *, norm_by_std: bool = True
) -> tuple[Tensor, Tensor]:
    """RLOO (REINFORCE leave-one-out): an episode's return minus the mean return of the
    *other* episodes of its group; 0 for an episode alone in its group. ``norm_by_std`` is
    not used (the baseline keeps the estimate unbiased as it is)."""
    del norm_by_std
    totals, sums, counts, _, episode, returns = _per_episode(rewards, dones, groups, gamma)
    others = (sums - totals) / (counts - 1).clamp_min(1.0)
    adv = torch.where(counts > 1, totals - others, torch.zeros_like(totals))
    return adv[episode], returns


def remax(
    rewards: Tensor,
    dones: Tensor,
    groups: Tensor,
    gamma: float,
    *,
    norm_by_std: bool = True,
    greedy: Tensor,
) -> tuple[Tensor, Tensor]:
    """ReMax (Li et al., 2023): an episode's return minus the return of its group's greedy
    episode (the one copy of the reset group that acted with the policy's most likely
    actions from the same start); every step of the episode gets its episode's value, the
    greedy episodes themselves 0 (the advantage step drops them: they are no samples of the
    policy), and so does an episode whose group has no greedy one. ``norm_by_std`` is not
    used.

    Args:
        greedy: bool [M], the steps of greedy episodes.
    """
    del norm_by_std
    totals, episode = episode_returns(rewards, dones)
    last = torch.nonzero(dones).squeeze(1)
    greedy_ep = greedy[last]
    baseline, counts, _ = _group_stats(totals * greedy_ep, groups[last], greedy_ep.to(totals))
    adv = torch.where(
        (counts > 0) & ~greedy_ep, totals - baseline / counts.clamp_min(1.0), totals.new_zeros(())
    )
    return adv[episode], returns_to_go(rewards, dones, gamma)


def _check_stream(rewards: Tensor, dones: Tensor) -> None:
    if rewards.dim() != 1 or rewards.shape != dones.shape:
        raise ValueError(
            "an episodic estimator takes rewards and dones of one shape [M]; got "
            f"{tuple(rewards.shape)} and {tuple(dones.shape)}"
        )
    if rewards.numel() and not bool(dones[-1]):
        raise ValueError("an episodic estimator takes whole episodes: the last step must be done")
