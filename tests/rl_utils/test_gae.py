"""GAE against a slow plain-Python reference loop."""

import pytest
import torch

from ding_lite.rl_utils import gae, gae_with_returns


def reference_gae(rewards, values, next_values, terminated, dones, gamma, lam):
    """One (t, b) at a time, straight from the definitions."""
    T, B = len(rewards), len(rewards[0])
    adv = [[0.0] * B for _ in range(T)]
    for b in range(B):
        next_adv = 0.0
        for t in reversed(range(T)):
            bootstrap = 0.0 if terminated[t][b] else gamma * next_values[t][b]
            delta = rewards[t][b] + bootstrap - values[t][b]
            if dones[t][b]:
                next_adv = 0.0
            adv[t][b] = delta + gamma * lam * next_adv
            next_adv = adv[t][b]
    return torch.tensor(adv, dtype=torch.float64)


def random_rollout(T, B, seed):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, B, generator=g, dtype=torch.float64)
    values = torch.randn(T, B, generator=g, dtype=torch.float64)
    next_values = torch.randn(T, B, generator=g, dtype=torch.float64)
    terminated = torch.rand(T, B, generator=g) < 0.15
    truncated = (torch.rand(T, B, generator=g) < 0.15) & ~terminated
    return rewards, values, next_values, terminated, terminated | truncated


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("gamma", "lam"), [(0.99, 0.95), (0.9, 1.0), (0.5, 0.0)])
def test_gae_matches_reference_loop(seed, gamma, lam):
    r, v, nv, term, done = random_rollout(T=23, B=5, seed=seed)
    assert term.any() and (done & ~term).any()  # both kinds of episode end occur
    expected = reference_gae(r.tolist(), v.tolist(), nv.tolist(), term.tolist(), done.tolist(),
                             gamma, lam)  # fmt: skip
    torch.testing.assert_close(gae(r, v, nv, term, done, gamma, lam), expected)
    # Float masks give the same answer as bool masks.
    torch.testing.assert_close(gae(r, v, nv, term.double(), done.double(), gamma, lam), expected)


def test_terminated_zeroes_bootstrap_truncated_keeps_it():
    ones = torch.ones(1, 2, dtype=torch.float64)
    term = torch.tensor([[True, False]])
    done = torch.tensor([[True, True]])  # column 1 is truncated
    adv = gae(ones, 0 * ones, 2 * ones, term, done, gamma=0.5, lam=0.9)
    torch.testing.assert_close(adv, torch.tensor([[1.0, 2.0]], dtype=torch.float64))


def test_returns_are_advantages_plus_values():
    r, v, nv, term, done = random_rollout(T=7, B=3, seed=4)
    adv, ret = gae_with_returns(r, v, nv, term, done, 0.99, 0.95)
    torch.testing.assert_close(adv, gae(r, v, nv, term, done, 0.99, 0.95))
    torch.testing.assert_close(ret, adv + v)


def test_shape_mismatch_raises():
    x = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="one shape"):
        gae(x, x, x, x, torch.zeros(4, 3), 0.99, 0.95)
