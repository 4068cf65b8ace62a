"""Helpers that make same-step autoreset cheap: a pool of initial states and a row select.

Both work without host syncs: which copies reset is only known on the device, so every copy
takes part in the blend and the pool is refreshed a fixed amount per step.
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.reset_groups import GroupedResets, check_reset_group_size

_ELEMENT_DTYPES = (torch.complex128, torch.int64, torch.int32, torch.int16, torch.uint8)


class RowSelect:
    """``out[i] = a[i] if mask[i] else b[i]`` for fixed ``[N, D]`` buffers, without host sync.

    Selecting rows of small ``[N, D]`` tensors with ``torch.where(mask[:, None], a, b)``
    broadcasts the mask along the short last dim, which runs a slow strided kernel on CPU
    (about 5x a contiguous op). Here each row is viewed as one 16-, 8-, 4- or 2-byte element
    (or a few), so the select is a plain ``[N]`` one; selects only move bits, so values (NaN
    payloads included) come through unchanged. The views are built once, so the buffers must
    be updated in place.
    """

    def __init__(self, a: Tensor, b: Tensor, out: Tensor) -> None:
        """Builds the element views.

        Args:
            a: Contiguous ``[N, D]`` rows taken where the mask is True.
            b: Contiguous ``[N, D]`` rows taken elsewhere; same dtype and shape as ``a``.
            out: Contiguous ``[N, D]`` destination (may be ``b``).
        """
        views = [_row_elements(t) for t in (a, b, out)]
        if views[0].shape[1] == 1:  # one element per row: a plain [N] select
            views = [v.squeeze(1) for v in views]
            self._mask_dims = 1
        else:
            self._mask_dims = 2
        self._a, self._b, self._out = views

    def where_args(self) -> tuple[Tensor, Tensor, Tensor, int]:
        """``(a, b, out, mask_dims)``: the element views, for callers that inline the select.

        ``torch.where(mask if mask_dims == 1 else mask.unsqueeze(1), a, b, out=out)`` is
        what :meth:`__call__` does.
        """
        return self._a, self._b, self._out, self._mask_dims

    def __call__(self, mask: Tensor) -> None:
        """Writes the selection into ``out``.

        Args:
            mask: bool ``[N]``.
        """
        cond = mask if self._mask_dims == 1 else mask.unsqueeze(1)
        torch.where(cond, self._a, self._b, out=self._out)


def _row_elements(t: Tensor) -> Tensor:
    """Views contiguous ``[N, D]`` ``t`` as ``[N, k]`` with the widest element that fits."""
    if not t.is_contiguous() or t.dim() != 2:
        raise ValueError(f"need a contiguous 2-D tensor, got shape {list(t.shape)}")
    row_bytes = t.shape[1] * t.element_size()
    for dtype in _ELEMENT_DTYPES:
        size = dtype.itemsize
        if row_bytes % size == 0 and (t.storage_offset() * t.element_size()) % size == 0:
            return t.view(dtype)
    return t


class ResetPool:
    """Initial states drawn ahead of time, so autoreset needs no fresh draw for all N copies.

    Drawing ``[N, D]`` uniforms every step would cost about as much as a whole CartPole step,
    yet only the few copies whose episode ended use them. The pool instead redraws a rolling
    ``1 / refresh_steps`` share of its rows per step, so every row is renewed at least every
    ``refresh_steps`` steps. Each reset therefore starts from an exact ``U(low, high)`` draw;
    only a copy whose episodes last fewer than ``refresh_steps`` steps may start two of them
    from the same draw.

    Attributes:
        values: ``[N, D]`` initial states; row ``i`` is copy ``i``'s next one.
    """

    def __init__(
        self,
        *,
        num_envs: int,
        low: tuple[float, ...],
        high: tuple[float, ...],
        generator: torch.Generator,
        device: torch.device,
        dtype: torch.dtype = torch.float32,
        refresh_steps: int = 8,
    ) -> None:
        """Allocates and fills the pool.

        Args:
            num_envs: Number of copies ``N``.
            low: Lower bound of each of the ``D`` state variables.
            high: Upper bound of each state variable.
            generator: Random generator on ``device`` (the env's, for reproducibility).
            device: Device of the values.
            dtype: Dtype of the values.
            refresh_steps: Every row is redrawn within this many :meth:`advance` calls.
        """
        if len(low) != len(high):
            raise ValueError(f"low/high lengths differ: {len(low)} vs {len(high)}")
        self._generator = generator
        self.values = torch.empty(num_envs, len(low), dtype=dtype, device=device)
        block = -(-num_envs // refresh_steps)
        # Views built once: slicing every step costs as much as a small op.
        self._blocks = [self.values[i : i + block] for i in range(0, num_envs, block)]
        self._cursor = 0
        # One uniform_ call when all variables share their bounds (CartPole); otherwise scale
        # U(0, 1) per column.
        self._shared_bounds = (low[0], high[0]) if len({*low}) == len({*high}) == 1 else None
        self._low = torch.tensor(low, dtype=dtype, device=device)
        self._width = torch.tensor(high, dtype=dtype, device=device) - self._low
        self.refill()

    def _draw(self, out: Tensor) -> None:
        if self._shared_bounds is not None:
            out.uniform_(*self._shared_bounds, generator=self._generator)
        else:
            out.uniform_(0.0, 1.0, generator=self._generator).mul_(self._width).add_(self._low)

    def refill(self) -> None:
        """Redraws every row and restarts the rolling cursor."""
        self._cursor = 0
        self._draw(self.values)

    def take_all(self) -> Tensor:
        """Returns a fresh ``[N, D]`` draw (for a full reset) and redraws the pool."""
        self.refill()
        taken = self.values.clone()
        self.refill()
        return taken

    def advance(self, done: Tensor | None = None) -> None:
        """Redraws the next block of rows; call once per step after using ``values``.

        Args:
            done: Unused: the pool renews rows on a fixed schedule, whoever took them. It is
                there so that :class:`GroupedResets`, which needs it, is called the same way.
        """
        cursor = self._cursor
        if self._shared_bounds is not None:  # inlined _draw: this runs on every step
            self._blocks[cursor].uniform_(*self._shared_bounds, generator=self._generator)
        else:
            self._draw(self._blocks[cursor])
        cursor += 1
        self._cursor = 0 if cursor == len(self._blocks) else cursor

    def state_dict(self) -> dict[str, Any]:
        """The pool's values and cursor, for checkpoints."""
        return {"values": self.values.clone(), "cursor": self._cursor}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned.

        Raises:
            ValueError: ``state`` is a :class:`GroupedResets` one (reset groups were on).
        """
        if "group_size" in state:
            raise ValueError(
                f"state saved with reset_group_size={state['group_size']}, this env has 1; "
                "resume with the env.reset_group_size that saved it"
            )
        self.values.copy_(state["values"])
        self._cursor = int(state["cursor"])


def make_reset_source(
    *,
    num_envs: int,
    group_size: int,
    low: tuple[float, ...],
    high: tuple[float, ...],
    generator: torch.Generator,
    device: torch.device,
    dtype: torch.dtype = torch.float32,
    refresh_steps: int = 8,
) -> ResetPool | GroupedResets:
    """Where an env's copies take their initial states U(low, high) from.

    Both kinds have ``values`` (row ``i``: copy ``i``'s next initial state, updated in
    place), ``take_all()``, ``advance(done)``, ``state_dict()`` and ``load_state_dict()``.

    Args:
        num_envs: Number of copies ``N``.
        group_size: 1 for a :class:`ResetPool` (independent copies); ``K > 1`` for
            :class:`GroupedResets`, whose k-th episodes of the copies ``i`` with equal
            ``i // K`` start alike (see :mod:`ding_lite.envs.reset_groups`).
        low: Lower bound of each state variable.
        high: Upper bound of each state variable.
        generator: The env's random generator, on ``device``.
        device: Device of the values.
        dtype: Dtype of the values.
        refresh_steps: See :class:`ResetPool` (unused with groups).
    """
    if group_size == 1:
        return ResetPool(
            num_envs=num_envs,
            low=low,
            high=high,
            generator=generator,
            device=device,
            dtype=dtype,
            refresh_steps=refresh_steps,
        )
    return GroupedResets(
        num_envs=num_envs,
        group_size=group_size,
        low=low,
        high=high,
        generator=generator,
        device=device,
        dtype=dtype,
    )


OBSERVE_MODES = ("full", "position")


def observes_position_only(env_name: str, observe: str) -> bool:
    """Whether ``observe`` (an env's ``observe`` argument) hides the velocities.

    ``"full"`` shows the whole state; ``"position"`` shows positions only, so a policy needs
    memory to tell how the state moves.

    Raises:
        ValueError: ``observe`` is neither mode.
    """
    if observe not in OBSERVE_MODES:
        raise ValueError(
            f"{env_name}: observe must be one of {', '.join(OBSERVE_MODES)}, got {observe!r}"
        )
    return observe == "position"


class PooledStateEnv(TensorVectorEnv):
    """A ``TensorVectorEnv`` whose physical state is one ``[N, D]`` tensor reset from a pool.

    The subclass's ``_step_physics`` writes the stepped state into ``self._next``; autoreset
    then commits it to ``self._state`` with the rows of finished copies taken from a
    :class:`ResetPool` (or, with reset groups, :class:`GroupedResets`), so the final
    observation comes from ``_next`` and nothing is copied twice. Subclasses call
    :meth:`_init_pooled_state` in their constructor and implement :meth:`_obs_of`.
    """

    def _init_pooled_state(
        self,
        *,
        low: tuple[float, ...],
        high: tuple[float, ...],
        dtype: torch.dtype,
        refresh_steps: int = 8,
        group_size: int = 1,
    ) -> None:
        """Allocates ``_state``, ``_next`` and the reset pool of initial states U(low, high).

        Args:
            low: Lower bound of each of the ``D`` state variables at reset.
            high: Upper bound of each state variable at reset.
            dtype: Dtype of the physical state.
            refresh_steps: See :class:`ResetPool`; at most the shortest episode's length.
            group_size: The env's ``reset_group_size`` (see :func:`make_reset_source`).

        Raises:
            ValueError: ``group_size`` is not a positive int dividing ``num_envs``.
        """
        self.reset_group_size = check_reset_group_size(self.name, self.num_envs, group_size)
        self.dtype = dtype
        self._state = torch.zeros(self.num_envs, len(low), dtype=dtype, device=self.device)
        self._next = torch.empty_like(self._state)  # state after physics, before autoreset
        self._pool = make_reset_source(
            num_envs=self.num_envs,
            group_size=group_size,
            low=low,
            high=high,
            generator=self.generator,
            device=self.device,
            dtype=dtype,
            refresh_steps=refresh_steps,
        )
        self._select_reset_rows = RowSelect(self._pool.values, self._next, out=self._state)

    @abc.abstractmethod
    def _obs_of(self, state: Tensor) -> Tensor:
        """Returns the float32 observation ``[N, *obs_shape]`` of ``state``, in fresh memory."""

    @property
    def state(self) -> Tensor:
        """``[N, D]`` physical state; assigning copies into the env's buffer."""
        return self._state

    @state.setter
    def state(self, value: Tensor) -> None:
        self._state.copy_(torch.as_tensor(value).expand_as(self._state))

    def _reset_state(self, mask: Tensor | None) -> None:
        # _step_physics leaves the stepped state in _next; this commits it to _state with the
        # rows in ``mask`` taken from the pool instead.
        if mask is None:
            self._state.copy_(self._pool.take_all())
        else:
            self._select_reset_rows(mask)
            self._pool.advance(mask)

    def _obs(self) -> Tensor:
        return self._obs_of(self._state)

    def _autoreset(self, done: Tensor) -> tuple[Tensor, Tensor]:
        # The stepped state stays in _next while the reset one is written to _state.
        self._reset_state(done)
        return self._obs(), self._obs_of(self._next)

    def _extra_state(self) -> dict[str, Any]:
        return {"state": self._state.clone(), "pool": self._pool.state_dict()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.state = state["state"]
        self._pool.load_state_dict(state["pool"])
