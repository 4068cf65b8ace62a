"""The recurrent core: a replayed segment equals stepping, and episode starts reset the state."""

from __future__ import annotations

import pytest
import torch

from ding_lite.model.recurrent import RecurrentCore

T, B, IN, H = 6, 5, 3, 4


def _core(kind: str) -> RecurrentCore:
    torch.manual_seed(0)
    return RecurrentCore(kind, IN, H)


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(T, B, IN, generator=g)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[2, 0] = starts[4, 1] = starts[0, 2] = True  # episodes that start mid-segment
    return x, starts


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_replaying_a_segment_equals_stepping_it(kind):
    core = _core(kind)
    x, starts = _inputs()
    state0 = torch.randn(B, core.state_size, generator=torch.Generator().manual_seed(2))
    state, stepped = state0, []
    for t in range(T):  # as a collector steps it
        out, state = core.step(x[t], state, starts[t])
        stepped.append(out)
    replayed, last = core(x, state0, starts)  # as the update replays it
    torch.testing.assert_close(replayed, torch.stack(stepped), rtol=0, atol=1e-6)
    torch.testing.assert_close(last, state, rtol=0, atol=1e-6)
    assert replayed.shape == (T, B, H) and last.shape == (B, core.state_size)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_an_episode_start_zeroes_the_state(kind):
    core = _core(kind)
    x, _ = _inputs()
    start = torch.ones(B, dtype=torch.bool)
    from_zero, _ = core.step(x[0], core.initial_state(B), start)
    from_noise, _ = core.step(x[0], torch.full((B, core.state_size), 3.0), start)
    assert torch.equal(from_zero, from_noise)
    kept, _ = core.step(x[0], torch.full((B, core.state_size), 3.0), ~start)
    assert not torch.equal(kept, from_zero)  # without a start the state is used


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_gradients_flow_back_through_time_but_not_across_an_episode_start(kind):
    core = _core(kind)
    x, _ = _inputs()
    x.requires_grad_(True)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[3, 0] = True  # row 0's episode starts at t = 3
    out, _ = core(x, core.initial_state(B), starts)
    out[-1].sum().backward()
    assert x.grad[0, 1].abs().sum() > 0  # row 1: the last output depends on the first input
    assert torch.equal(x.grad[:3, 0], torch.zeros(3, IN))  # row 0: cut at its new episode
    assert x.grad[3, 0].abs().sum() > 0


def test_state_sizes_and_errors():
    assert RecurrentCore("lstm", IN, H).state_size == 2 * H
    assert RecurrentCore("gru", IN, H).state_size == H
    assert RecurrentCore("gru", IN, H).initial_state(2).shape == (2, H)
    with pytest.raises(ValueError, match="one of lstm, gru, got 'rnn'"):
        RecurrentCore("rnn", IN, H)
    with pytest.raises(ValueError, match="at least 1"):
        RecurrentCore("lstm", IN, 0)
    core = RecurrentCore("gru", IN, H)
    with pytest.raises(ValueError, match=r"\[T, B, features\]"):
        core(torch.zeros(B, IN), core.initial_state(B), torch.zeros(B, dtype=torch.bool))
