"""Air-combat self-play (``opponent="self"``): the caller flies both fighters.

Design: self-play is the one-agent env with its internal opponent replaced by the caller,
so one policy trains against itself. The env declares ``num_agents = 2`` and follows the
agent-axis contract of :class:`~ding_lite.envs.base.TensorVectorEnv`, with agent 0 the blue
fighter (P1) and agent 1 the red one (P2):

- obs float32 ``[N, 2, 10]``: each agent's OWN observation, the one-agent env's features
  computed from its own side (own position, heading, speed, missiles, alive; the enemy's
  distance, bearing off its own nose, speed and alive), so one policy flies either fighter.
  Agent 0's row is exactly the one-agent env's observation.
- action ``[N, 2, 3]`` (rudder, throttle, fire per agent), ``[N, 2, 2]`` (rudder, fire)
  with a fixed ``throttle``, which then holds for both; or a dict of ``[N, 2]`` tensors.
- reward float32 ``[N, 2]``: P1's reward formula applied from each agent's side: its
  outcome, and with ``reward="shaped"`` its survival bonus, the enemy missiles it evaded and
  the penalty for its own wasted missiles. Agent 0's column is exactly the one-agent
  env's reward; with ``reward="zero"`` agent 1's is agent 0's negated. ``reward="zero_sum"``
  gives each agent ``(own shaped - other's shaped) / 2``: the columns negate each other,
  so two copies of one policy gain nothing by both holding fire (with ``"shaped"`` both
  collect the survival bonus in a truce).
- ``info["episode"]["outcome"]`` and ``info["combat"]["outcome"]``: ``[N, 2]``, +1 where
  that agent won, -1 where it lost, 0 for a draw (so the columns are each other's
  negation); ``info["episode"]["return"]`` ``[N, 2]``.
- ``terminated``, ``truncated``, episode lengths and masks stay ``[N]``: a fight ends for
  both fighters at once, and autoreset restarts the whole copy.

There is no opponent agent (``env.opponent`` is None), no agent-side helper (the
missile-approach warner is not in the observation), and ``opponent_kwargs`` are refused.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.fields import MixinBase
from ding_lite.envs.aircombat.flags import flag
from ding_lite.envs.aircombat.observe import swap


class SelfPlay(MixinBase):
    """The self-play methods of the air-combat env (a mixin: they use the env's tensors)."""

    def _self_play_controls(self, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(rudder, throttle, trigger)``, float32 ``[N, 2]`` each, from ``action``
        ``[N, agent, control]``: the agents are the aircraft; trigger is a 0/1 flag."""
        rudder = action[:, :, 0].clamp(-1.0, 1.0)
        if self.throttle is None:
            throttle = action[:, :, 1].clamp(0.0, 1.0)
        else:
            throttle = torch.full_like(rudder, self.throttle)
        return rudder, throttle, flag(torch.ge, action[:, :, -1].contiguous(), 0.5)

    def _self_play_reward(
        self, in_flight: Tensor | None, hits: Tensor, still: Tensor, unlocked: Tensor
    ) -> Tensor:
        """float32 ``[N, 2]``: each agent's reward from its own side.

        P1's formula of the one-agent env, applied to both aircraft at once; call after the
        step's outcome (``_outcome``, ``[N, 2]``) and ``alive`` are set.

        Args:
            in_flight: ``[N, 2]`` missiles of each shooter in flight before the step (None
                without shaping).
            hits: ``[N, 2]`` missiles of each shooter that hit this step.
            still: ``[N, 2]`` missiles of each shooter still in flight after the step.
            unlocked: ``[N, 2]`` missiles each shooter launched without a lock this step.
        """
        reward = self._outcome
        if not self.shaped or in_flight is None:  # counted when shaping
            return reward
        lost = in_flight - hits - still  # each shooter's missiles gone without a hit
        wasted = lost + unlocked
        # The enemy's lost missiles are the ones each side evaded.
        bonus = swap(lost) * P.DEFEATED_MISSILE_REWARD + self.survival_reward
        shaped = torch.addcmul(reward, bonus, self.alive).sub_(
            wasted, alpha=P.WASTED_MISSILE_PENALTY
        )
        if self.zero_sum:  # what one side gains the other loses: no truce pays
            return (shaped - swap(shaped)) * 0.5
        return shaped
