"""The env the air-combat mixins work on, as type checkers see it.

The mixins of :class:`~ding_lite.envs.aircombat.env.AirCombatEnv` (:mod:`.slots`,
:mod:`.observe`, :mod:`.resets`, :mod:`.selfplay`, :mod:`.rewards`, :mod:`.drawing`) read
and write the tensors the env's constructor sets and call each other's methods. Each one
derives from :data:`MixinBase`: ``object`` at run time (nothing changes there), and for a
type checker :class:`AirCombatFields`, a ``TensorVectorEnv`` that declares those fields and
methods, so every use is checked against one list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from torch import Tensor

    from ding_lite.envs.autoreset import GroupedResets, ResetPool
    from ding_lite.envs.base import TensorVectorEnv

    class AirCombatFields(TensorVectorEnv):
        """The fields :class:`~ding_lite.envs.aircombat.env.AirCombatEnv` sets, and the
        mixin methods the other mixins call (see the env for their meaning)."""

        # Aircraft, [N, 2] (P1, P2).
        x: Tensor
        y: Tensor
        heading: Tensor
        speed: Tensor
        alive: Tensor
        stock: Tensor
        cooldown: Tensor
        fired: Tensor
        # Missile slots, [N, 2, MISSILES]: views of the rows of the [7, N, 2, MISSILES] block.
        m_x: Tensor
        m_y: Tensor
        m_cx: Tensor
        m_cy: Tensor
        m_fuel: Tensor
        m_active: Tensor
        m_seen: Tensor
        _missiles: Tensor
        # Settings.
        self_play: bool
        shaped: bool
        zero_sum: bool
        survival_reward: float
        throttle: float | None
        draw_reward: float
        # Working tensors and constants.
        _compact: bool
        _const: dict[str, Tensor]
        _pool: ResetPool | GroupedResets
        _sides: Tensor
        _slots: Tensor
        _ones_slots: Tensor
        _swap_index: Tensor
        _bearing_offset: Tensor
        _obs_scale: Tensor
        _p2_obs: Tensor
        _outcome: Tensor

        # Observation's methods that Resets calls, on [K, 2] fields (x, y, heading, speed,
        # stock, alive): P1's and P2's observations, or both sides' (self-play)
        # (and the copies the fields are of, None: all).
        _observe: Callable[..., tuple[Tensor, Tensor]]
        _observe_sides: Callable[..., Tensor]

    MixinBase = AirCombatFields
else:
    MixinBase = object
