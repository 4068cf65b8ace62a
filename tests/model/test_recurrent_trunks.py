"""A recurrent actor-critic with a trunk each (``share_encoder=False``) or one shared trunk."""

from __future__ import annotations

import pytest
import torch

from ding_lite.envs.spaces import Box
from ding_lite.model.actor_critic import ActorCritic

S, T, OBS, H = 3, 5, 2, 8


def _model(shared: bool, kind: str = "lstm") -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(
        OBS, Box((-1.0,), (1.0,)), hidden_sizes=(6,), core=kind, core_size=H, share_encoder=shared
    )


def _segments(model: ActorCritic) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(S * T, OBS, generator=g)
    state = torch.randn(S, model.state_size, generator=g)
    starts = torch.zeros(S * T, dtype=torch.bool)
    starts[2] = starts[T + 4] = True  # episodes that start mid-segment
    return obs, state, starts


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_separate_trunks_hold_both_states_actor_first(kind):
    shared, separate = _model(True, kind), _model(False, kind)
    per_core = 2 * H if kind == "lstm" else H
    assert shared.state_size == per_core and shared.critic_core is None
    assert separate.state_size == 2 * per_core and separate.critic_core is not None
    assert separate.initial_state(4).shape == (4, 2 * per_core)
    assert not separate.initial_state(4).any()


@pytest.mark.parametrize("shared", [True, False])
def test_replaying_segments_equals_stepping_them(shared):
    model = _model(shared)
    obs, state0, starts = _segments(model)
    dist, value = model(obs, state0, starts)
    rows = obs.view(S, T, OBS)
    begins = starts.view(S, T)
    state, values = state0, []
    for t in range(T):  # as a collector steps every segment at once
        _, _, v, state = model.step(rows[:, t], state, begins[:, t])
        values.append(v)
    stepped = torch.stack(values, dim=1).flatten()
    torch.testing.assert_close(value, stepped, rtol=0, atol=1e-5)
    torch.testing.assert_close(model.get_value(obs, state0, starts), value, rtol=0, atol=0)
    torch.testing.assert_close(model.get_dist(obs, state0, starts).mean, dist.mean, rtol=0, atol=0)


def test_the_value_loss_reaches_only_the_critic_trunk_when_separate():
    model = _model(False)
    obs, state, starts = _segments(model)
    model.get_value(obs, state, starts).square().sum().backward()
    assert all(p.grad is None for p in model.core.parameters())
    assert all(p.grad is None for p in model.actor_encoder.parameters())
    assert all(p.grad is not None for p in model.critic_core.parameters())
    shared = _model(True)
    shared.get_value(obs, state[:, : shared.state_size], starts).square().sum().backward()
    assert all(p.grad is not None for p in shared.core.parameters())


def test_the_critic_state_does_not_change_the_policy():
    model = _model(False)
    obs, state, starts = _segments(model)
    other = state.clone()
    other[:, model.core.state_size :] += 1.0  # only the critic's part differs
    torch.testing.assert_close(
        model.get_dist(obs, state, starts).mean, model.get_dist(obs, other, starts).mean
    )
    assert not torch.allclose(
        model.get_value(obs, state, starts), model.get_value(obs, other, starts)
    )
