"""A recurrent core (LSTM or GRU) stepped over time, its state reset where episodes start.

The building block of policies with memory: a collector steps it one env step at a time,
carrying the state per env copy; the update replays a segment of ``T`` steps from the state
stored at the segment's start. A replay runs torch's fused ``nn.LSTM`` / ``nn.GRU`` over
each stretch of time in which no row starts an episode, and zeroes the state of the rows
that start one between stretches, so a segment of 16 steps with a reset or two costs two or
three fused calls instead of 16 cell steps (about 3x less time on a CPU). Stepping and
replaying use the same weights and the same maths; their outputs agree to float rounding
(the fused kernel multiplies all of a stretch's inputs at once).

The state is one flat tensor ``[B, state_size]`` (an LSTM's ``h`` and ``c`` side by side),
so that it rides in rollout files and checkpoints like any other tensor.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import Tensor, nn

CORES = ("lstm", "gru")


class RecurrentCore(nn.Module):
    """An ``nn.LSTM`` or ``nn.GRU`` (one layer) with a flat state and episode resets.

    Args:
        kind: ``"lstm"`` or ``"gru"``.
        input_size: Features of one input row.
        hidden_size: Features of the output (the hidden state ``h``).

    Raises:
        ValueError: an unknown ``kind`` or a size below 1.
    """

    def __init__(self, kind: str, input_size: int, hidden_size: int) -> None:
        super().__init__()
        if kind not in CORES:
            raise ValueError(f"recurrent core must be one of {', '.join(CORES)}, got {kind!r}")
        if input_size < 1 or hidden_size < 1:
            raise ValueError(
                f"recurrent core sizes must be at least 1, got input {input_size}, "
                f"hidden {hidden_size}"
            )
        self.kind = kind
        self.hidden_size = hidden_size
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(input_size, hidden_size)

    @property
    def state_size(self) -> int:
        """Width of the flat state: ``2 * hidden_size`` for an LSTM (h, c), else ``hidden_size``."""
        return 2 * self.hidden_size if self.kind == "lstm" else self.hidden_size

    def initial_state(self, batch: int, device: str | torch.device = "cpu") -> Tensor:
        """Zeros ``[batch, state_size]``: the state at the start of every episode."""
        weight = cast(Tensor, self.rnn.weight_ih_l0)  # torch types module attributes loosely
        return torch.zeros(batch, self.state_size, device=device, dtype=weight.dtype)

    def _run(self, x: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        """The fused layer over ``x`` ``[T, B, input]`` from the flat ``state``, no resets."""
        if self.kind == "lstm":
            h, c = (part.unsqueeze(0).contiguous() for part in state.split(self.hidden_size, 1))
            out, (h, c) = self.rnn(x, (h, c))
            return out, torch.cat((h[0], c[0]), dim=1)
        out, h = self.rnn(x, state.unsqueeze(0).contiguous())
        return out, h[0]

    def step(self, x: Tensor, state: Tensor, episode_start: Tensor) -> tuple[Tensor, Tensor]:
        """One time step.

        Args:
            x: Inputs ``[B, input_size]``.
            state: The state before the step, ``[B, state_size]``.
            episode_start: Bool ``[B]``: rows whose episode starts with this input; their
                state is zeroed before the step.

        Returns:
            ``(out, state)``: the output ``h`` ``[B, hidden_size]`` and the new state.
        """
        state = state * (~episode_start).to(state.dtype).unsqueeze(1)
        out, state = self._run(x.unsqueeze(0), state)
        return out[0], state

    def forward(self, x: Tensor, state: Tensor, episode_start: Tensor) -> tuple[Tensor, Tensor]:
        """Replays ``T`` steps from ``state`` (backpropagation goes through all of them).

        Args:
            x: Inputs ``[T, B, input_size]``.
            state: The state before the first step, ``[B, state_size]``.
            episode_start: Bool ``[T, B]``: where an episode starts (the state is zeroed
                before that step).

        Returns:
            ``(out, state)``: outputs ``[T, B, hidden_size]`` and the state after the last
            step.
        """
        if x.dim() != 3 or episode_start.shape != x.shape[:2]:
            raise ValueError(
                f"recurrent core: x must be [T, B, features] and episode_start [T, B], got "
                f"{list(x.shape)} and {list(episode_start.shape)}"
            )
        keep = (~episode_start).to(state.dtype).unsqueeze(2)  # [T, B, 1]
        # Stretches of time without a start after their first step: one fused call each.
        cuts = [0, *(episode_start[1:].any(dim=1).nonzero().flatten() + 1).tolist(), x.shape[0]]
        outs = []
        for begin, end in zip(cuts[:-1], cuts[1:], strict=False):
            out, state = self._run(x[begin:end], state * keep[begin])
            outs.append(out)
        return torch.cat(outs) if len(outs) > 1 else outs[0], state
