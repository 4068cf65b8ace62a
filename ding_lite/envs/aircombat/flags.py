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


def flag(compare: Callable[..., Tensor], a: Tensor, b: Tensor | float) -> Tensor:
    """float32 ``compare(a, b)`` as 1.0 / 0.0, shaped like ``a`` (e.g. ``torch.lt``).

    ``a`` must have the broadcast shape of the two; a comparison written into a float
    tensor runs the vectorized kernel.
    """
    return compare(a, b, out=torch.empty_like(a, dtype=torch.float32))
