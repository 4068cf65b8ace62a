"""RngStream: a random stream of its own, swapped in for torch's global generator."""

from __future__ import annotations

import pytest
import torch

from ding_lite.utils.rng import COLLECT_STREAM, UPDATE_STREAM, RngStream, stream_seed


def test_a_stream_draws_the_same_numbers_however_its_draws_are_split_and_interleaved():
    one = RngStream(stream_seed(7, COLLECT_STREAM))
    with one:
        whole = torch.rand(6)
    two = RngStream(stream_seed(7, COLLECT_STREAM))
    torch.manual_seed(1)
    with two:
        first = torch.rand(2)
    torch.rand(5)  # global draws in between do not move the stream
    with two:
        rest = torch.rand(4)
    assert torch.equal(torch.cat((first, rest)), whole)


def test_the_global_generator_is_left_as_it_was():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    with RngStream(11):
        torch.rand(100)
    assert torch.equal(torch.rand(3), expected)


def test_streams_of_one_seed_differ_and_state_round_trips():
    assert stream_seed(0, COLLECT_STREAM) != stream_seed(0, UPDATE_STREAM)
    assert stream_seed(0, COLLECT_STREAM) != stream_seed(1, COLLECT_STREAM)
    assert 0 <= stream_seed(2**40, UPDATE_STREAM) < 2**63
    stream = RngStream(5)
    with stream:
        torch.rand(3)
    saved = stream.state_dict()
    with stream:
        after = torch.rand(4)
    restored = RngStream(0)
    restored.load_state_dict(saved)
    with restored:
        assert torch.equal(torch.rand(4), after)


def test_a_stream_in_use_cannot_be_entered_again():
    stream = RngStream(0)
    with stream, pytest.raises(RuntimeError, match="already in use"), stream:
        pass
