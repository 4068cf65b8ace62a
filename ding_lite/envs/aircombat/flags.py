"""Float 0/1 flags: the boolean algebra of the air-combat env and its scripted agents.

On CPU, comparisons that produce bool tensors, ``torch.where`` and bool-to-float casts run
scalar loops, several times slower than vectorized float arithmetic. So the env and the
CrankAgent keep their flags as float32 1.0 / 0.0: ``a * b`` is "and", ``torch.maximum(a, b)``
"or", ``a - a * b`` "a and not b", and ``torch.lerp(b, a, flag)`` selects ``a`` where the
flag is set (exact for 0/1 weights and finite values). Flags only ever hold +0.0 or 1.0, so
their bits are all zero exactly when false, which lets a row of them be tested as one wider
element.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P

# A float32 slot row [MISSILES] read as one element (see any_slot); None: a reduction.
_ROW_DTYPE = {1: torch.int32, 2: torch.int64, 4: torch.complex128}.get(P.MISSILES)


def flag(compare: Callable[..., Tensor], a: Tensor, b: Tensor | float) -> Tensor:
    """float32 ``compare(a, b)`` as 1.0 / 0.0, shaped like ``a`` (e.g. ``torch.lt``).

    ``a`` must have the broadcast shape of the two; a comparison written into a float
    tensor runs the vectorized kernel.
    """
    return compare(a, b, out=torch.empty_like(a, dtype=torch.float32))


def any_slot(flags: Tensor) -> Tensor:
    """bool ``[N, 2]``: any float32 0/1 flag of a ``[N, 2, MISSILES]`` slot row is set.

    With up to four slots, a row is read as one element (four are 16 bytes: complex128),
    since a reduction over a short last dim runs a slow strided kernel on CPU.
    """
    if _ROW_DTYPE is None:
        return flags.amax(-1) != 0
    return flags.view(_ROW_DTYPE).squeeze(-1) != 0
