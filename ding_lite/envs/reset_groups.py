"""Reset groups: copies whose k-th episodes start from the same initial state.

Critic-free estimators (GRPO, RLOO) compare the returns of episodes that started alike. With
``reset_group_size=K`` the copies ``i`` with equal ``i // K`` form a group, and each copy
counts its episodes since the last full ``reset()``: episode 0 is the one the full reset
starts, episode ``k`` the one its ``k``-th autoreset starts. The ``k``-th episode of every
copy of a group starts from the same initial state; other groups and other ``k`` get
independent draws from the env's usual distribution.

Copies of a group drift apart (one may finish three episodes while another finishes one), so
the state cannot be drawn once per group and step. :class:`GroupedResets` instead computes
it from a counter-based hash of (a key drawn from the env's generator at each full reset,
group, episode, state variable): the same inputs give the same state wherever and whenever
they are evaluated, with no table to keep and no host sync.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

# A 32-bit xorshift-multiply hash (the family of Wellons' hash-prospector). Values are kept
# in [0, 2**32) inside int64 lanes; both multipliers are odd and below 2**31, so a product
# stays below 2**63 and never overflows.
_MASK = 0xFFFF_FFFF
_M1 = 0x21F0_AAAD
_M2 = 0x735A_2D97


def check_reset_group_size(env_name: str, num_envs: int, group_size: Any) -> int:
    """Returns ``group_size`` if it is a positive int that divides ``num_envs``.

    Raises:
        ValueError: it is not, with what to change.
    """
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"{env_name}: reset_group_size must be a positive int, got {group_size!r}")
    if num_envs % group_size:
        raise ValueError(
            f"{env_name}: reset_group_size={group_size} does not divide num_envs={num_envs}; "
            "a reset group is that many whole env copies"
        )
    return group_size


def _mix32(x: Tensor) -> Tensor:
    """The full hash of int64 ``x`` in ``[0, 2**32)``, elementwise, out of place."""
    x = x ^ (x >> 16)
    x = (x * _M1) & _MASK
    x = x ^ (x >> 15)
    x = (x * _M2) & _MASK
    return x ^ (x >> 15)


class GroupedResets:
    """Initial states for reset groups, with the interface of :class:`ResetPool`.

    :attr:`values` row ``i`` always holds copy ``i``'s next initial state: that of its
    episode :attr:`next_episode` ``[i]``, in its group ``i // group_size``. Each value is
    ``U(low, high)`` from the hash of ``rows[i, d] ^ next_episode[i]``, where ``rows`` hashes
    (key, group, variable) once per full reset; so a step costs about ten elementwise ops
    on ``[N, D]`` int64, whatever the number of copies that reset.

    Attributes:
        group_size: Copies per group ``K``.
        values: ``[N, D]`` initial states, row ``i`` copy ``i``'s next one (updated in place,
            so a :class:`RowSelect` may view it).
        next_episode: int64 ``[N]``, the index of each copy's next episode (its current
            one plus 1), counted since the last full reset.
    """

    def __init__(
        self,
        *,
        num_envs: int,
        group_size: int,
        low: tuple[float, ...],
        high: tuple[float, ...],
        generator: torch.Generator,
        device: torch.device,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        """Allocates the buffers; nothing is drawn before :meth:`take_all`.

        Args:
            num_envs: Number of copies ``N``; a multiple of ``group_size``.
            group_size: Copies per group ``K``.
            low: Lower bound of each of the ``D`` state variables.
            high: Upper bound of each state variable.
            generator: Random generator on ``device`` (the env's): each full reset draws the
                key from it, so the states are a function of the env's seed.
            device: Device of the values.
            dtype: Dtype of the values.
        """
        if len(low) != len(high):
            raise ValueError(f"low/high lengths differ: {len(low)} vs {len(high)}")
        self.group_size = group_size
        self._generator = generator
        n, d = num_envs, len(low)
        self.values = torch.zeros(n, d, dtype=dtype, device=device)
        self.next_episode = torch.zeros(n, dtype=torch.int64, device=device)
        self._key = torch.zeros(2, dtype=torch.int64, device=device)
        # (group, variable) as one number per cell: the input rows is hashed from.
        group = torch.arange(n, device=device) // group_size
        self._cell = group[:, None] * d + torch.arange(d, device=device)
        self._rows = torch.zeros(n, d, dtype=torch.int64, device=device)
        self._hash = torch.empty_like(self._rows)
        self._shifted = torch.empty_like(self._rows)
        # Keep as many top bits of the hash as the dtype holds exactly (24 for float32), so
        # that U(0, 1) = bits * 2**-bits converts without rounding.
        self._bits = min(32, round(-math.log2(torch.finfo(dtype).eps)) + 1)
        low_t = torch.tensor(low, dtype=dtype, device=device)
        self._low = low_t.expand(n, d).contiguous()
        width = torch.tensor(high, dtype=dtype, device=device) - low_t
        self._scale = (width * 2.0**-self._bits).expand(n, d).contiguous()
        # 0-dim operands: a Python scalar is wrapped into a new tensor on every call.
        self._m1, self._m2, self._mask, self._fifteen, self._drop = (
            torch.tensor(v, dtype=torch.int64, device=device)
            for v in (_M1, _M2, _MASK, 15, 32 - self._bits)
        )

    def _fill(self) -> None:
        """Writes every copy's initial state of episode ``next_episode`` into ``values``."""
        x, tmp = self._hash, self._shifted
        # Half of _mix32 over rows ^ episode: rows is already a full hash, and the episode
        # changes low bits, which the first multiply carries upward.
        torch.bitwise_xor(self._rows, self.next_episode.unsqueeze(1), out=x)
        x.mul_(self._m1).bitwise_and_(self._mask)
        torch.bitwise_right_shift(x, self._fifteen, out=tmp)
        x.bitwise_xor_(tmp).mul_(self._m2).bitwise_and_(self._mask)
        x.bitwise_right_shift_(self._drop)  # the top bits, the best mixed
        torch.addcmul(self._low, x, self._scale, out=self.values)

    def _set_rows(self) -> None:
        """Hashes (key, group, variable) into ``rows``, after a new key."""
        key = self._key
        self._rows.copy_(_mix32(_mix32(self._cell ^ key[0]) ^ key[1]))

    def take_all(self) -> Tensor:
        """Starts over for a full reset: draws a new key and returns the ``[N, D]`` initial
        states of episode 0 (fresh memory); :attr:`values` then holds episode 1's."""
        self._key.random_(0, 2**32, generator=self._generator)
        self._set_rows()
        self.next_episode.zero_()
        self._fill()
        taken = self.values.clone()
        self.next_episode.fill_(1)
        self._fill()
        return taken

    def advance(self, done: Tensor | None = None) -> None:
        """Moves the copies in ``done`` to their next episode; call once per step after
        using ``values``.

        Args:
            done: bool ``[N]``, the copies that took their row of ``values`` this step
                (None: none did).
        """
        if done is not None:
            self.next_episode.add_(done)
            self._fill()

    def state_dict(self) -> dict[str, Any]:
        """The group size, key and episode counters (``values`` follow from them)."""
        return {
            "group_size": self.group_size,
            "key": self._key.clone(),
            "next_episode": self.next_episode.clone(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned.

        Raises:
            ValueError: ``state`` comes from an env with another reset group size.
        """
        saved = state.get("group_size", 1)
        if saved != self.group_size:
            raise ValueError(
                f"state saved with reset_group_size={saved}, this env has "
                f"{self.group_size}; resume with the env.reset_group_size that saved it"
            )
        self._key.copy_(state["key"])
        self.next_episode.copy_(state["next_episode"])
        self._set_rows()
        self._fill()
