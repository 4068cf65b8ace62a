"""Action-space descriptions shared by envs, models and policies.

Envs describe what they accept; models build their heads from it. Spaces are plain frozen
dataclasses (no sampling logic) so they can be compared, printed and saved in configs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


@dataclass(frozen=True)
class MultiDiscrete:
    """Independent discrete parts, part ``i`` with ``nvec[i]`` choices.

    Encoded as an integer tensor of shape [N, len(nvec)], column ``i`` in [0, nvec[i]).
    (gymnasium's ``MultiDiscrete`` and ``MultiBinary`` spaces map onto it.)
    """

    nvec: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.nvec or any(int(n) < 1 for n in self.nvec):
            raise ValueError(f"MultiDiscrete needs one or more parts of >= 1 choice: {self.nvec}")

    @property
    def dim(self) -> int:
        return len(self.nvec)

    @property
    def kind(self) -> str:
        return "multi_discrete"


ActionSpace = Discrete | Box | Hybrid | MultiDiscrete


def space_to_dict(space: ActionSpace) -> dict[str, Any]:
    """A space as plain JSON-able data (saved in checkpoints); see :func:`space_from_dict`."""
    if isinstance(space, Discrete):
        return {"type": "Discrete", "n": int(space.n)}
    if isinstance(space, Box):
        return {"type": "Box", "low": list(space.low), "high": list(space.high)}
    if isinstance(space, Hybrid):
        return {
            "type": "Hybrid",
            "continuous": space_to_dict(space.continuous),
            "discrete": [int(n) for n in space.discrete],
        }
    if isinstance(space, MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": [int(n) for n in space.nvec]}
    raise TypeError(f"not an action space: {space!r}")


def space_from_dict(data: Any) -> ActionSpace:
    """Rebuilds a space written by :func:`space_to_dict`.

    Raises:
        ValueError: ``data`` does not describe a space.
    """
    try:
        kind = data["type"]
        if kind == "Discrete":
            return Discrete(int(data["n"]))
        if kind == "Box":
            return Box(tuple(float(v) for v in data["low"]), tuple(float(v) for v in data["high"]))
        if kind == "Hybrid":
            cont = space_from_dict(data["continuous"])
            if not isinstance(cont, Box):
                raise ValueError("a Hybrid space's continuous part must be a Box")
            return Hybrid(cont, tuple(int(n) for n in data["discrete"]))
        if kind == "MultiDiscrete":
            return MultiDiscrete(tuple(int(n) for n in data["nvec"]))
    except (KeyError, TypeError) as err:
        raise ValueError(f"malformed action space {data!r}: {err}") from None
    raise ValueError(f"unknown action space type {kind!r}")
