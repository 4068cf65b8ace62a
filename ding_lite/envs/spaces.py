"""Action-space descriptions shared by envs, models and policies.

Envs describe what they accept; models build their heads from it. Spaces are plain frozen
dataclasses (no sampling logic) so they can be compared, printed and saved in configs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Discrete:
    """``n`` choices, encoded as an integer tensor of shape [N] with values in [0, n)."""

    n: int

    @property
    def kind(self) -> str:
        return "discrete"


@dataclass(frozen=True)
class Box:
    """A continuous action of shape [N, dim] bounded elementwise by ``low`` and ``high``."""

    low: tuple[float, ...]
    high: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.low) != len(self.high):
            raise ValueError(f"Box low/high lengths differ: {len(self.low)} vs {len(self.high)}")

    @property
    def dim(self) -> int:
        return len(self.low)

    @property
    def kind(self) -> str:
        return "continuous"


@dataclass(frozen=True)
class Hybrid:
    """A continuous part followed by independent discrete parts.

    Encoded as one float tensor of shape [N, continuous.dim + len(discrete)]: the first
    ``continuous.dim`` columns hold the continuous action, each later column one discrete
    choice (an integer stored as float).
    """

    continuous: Box
    discrete: tuple[int, ...]

    @property
    def dim(self) -> int:
        return self.continuous.dim + len(self.discrete)

    @property
    def kind(self) -> str:
        return "hybrid"


ActionSpace = Discrete | Box | Hybrid
