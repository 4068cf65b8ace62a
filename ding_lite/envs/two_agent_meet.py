"""``two_agent_meet``: a tiny cooperative 2-agent env that proves the agent axis end to end.

Small enough to check by hand (integer positions, no randomness) and easy enough that a
shared PPO policy learns its optimum in about 20,000 env steps.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.spaces import Discrete

LEFT, STAY, RIGHT = 0, 1, 2
WAIT_COST = 0.1  # paid by an agent for each step it ends on the cell it started from
MEET_REWARD = 1.0  # paid to both agents on the step they stand on the same cell


class TwoAgentMeetEnv(TensorVectorEnv):
    """Two agents on a line of ``size`` cells walk toward each other and meet.

    Every copy starts with agent 0 on cell 0 and agent 1 on cell ``size - 1``; the dynamics
    are deterministic (the env draws no random numbers). ``num_agents = 2``:

    - Observation float32 ``[N, 2, 2]``: agent ``i`` sees ``[own cell, other's cell] /
      (size - 1)``, both in ``[0, 1]``; the same function from each side, so one policy
      serves both agents.
    - Action ``Discrete(3)`` per agent, ``[N, 2]``: 0 left, 1 stay, 2 right. Positions are
      clamped to ``[0, size - 1]``; the agents move at the same time and may pass each
      other (swapping cells is not a meeting).
    - Reward float32 ``[N, 2]``: ``-WAIT_COST`` (0.1) to an agent whose cell did not change
      this step (it chose STAY, or walked into the end of the line), plus ``MEET_REWARD``
      (1.0) to both on the step they end on the same cell. The agents' rewards differ
      whenever only one of them waits.
    - The episode terminates on meeting and is truncated after ``max_episode_steps``
      (default ``2 * size``) steps; ``info["episode"]["return"]`` is ``[N, 2]``.

    Optimum: with the default ``size = 5`` both step inward twice and meet on cell 2 after
    2 steps, each returning 1.0 (2.0 for the team), the most any policy gets. In general the
    agents start ``d = size - 1`` cells apart and close at most 2 cells per step; when both
    change cells the gap changes by an even number, so an odd ``d`` needs one wait:
    :attr:`optimal_team_return` is ``2.0 - 0.1 * (d % 2)``, reached in ``ceil(d / 2)``
    steps. Waiting is what costs, so a policy that stays put (return ``-0.1`` per step) is
    no trap, and a uniformly random policy meets within the time limit about half the time:
    a small PPO with one policy for both agents (64 copies, 16-step rollouts) reaches the
    optimum in about 20,000 env steps.

    Attributes:
        size: Cells on the line.
        pos: int64 ``[N, 2]``, each agent's cell. Assign to it to place agents before a step.
    """

    name = "two_agent_meet"
    num_agents = 2

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        size: int = 5,
        max_episode_steps: int | None = None,
    ) -> None:
        """Builds ``num_envs`` copies; call :meth:`reset` before stepping.

        Args:
            num_envs: Number of copies ``N``.
            device: Device of all tensors.
            seed: Kept for the registry's interface; the env draws no random numbers.
            size: Cells on the line, at least 2; the agents start ``size - 1`` apart.
            max_episode_steps: Truncation limit; None: ``2 * size``.

        Raises:
            ValueError: ``size`` below 2 or not an int.
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 2:
            raise ValueError(f"{self.name}: size must be an int >= 2, got {size!r}")
        super().__init__(
            num_envs=num_envs,
            obs_shape=(2,),
            action_space=Discrete(3),
            max_episode_steps=2 * size if max_episode_steps is None else max_episode_steps,
            device=device,
            seed=seed,
        )
        self.size = size
        self._start = torch.tensor([0, size - 1], dtype=torch.int64, device=self.device)
        self.pos = self._start.repeat(num_envs, 1)
        self._scale = 1.0 / (size - 1)

    @property
    def optimal_team_return(self) -> float:
        """The best sum of both agents' returns: an odd gap costs one wait."""
        return 2 * MEET_REWARD - WAIT_COST * ((self.size - 1) % 2)

    def _reset_state(self, mask: Tensor | None) -> None:
        if mask is None:
            self.pos = self._start.repeat(self.num_envs, 1)
        else:
            self.pos = torch.where(mask.unsqueeze(1), self._start, self.pos)

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        before = self.pos
        self.pos = (before + (action - STAY)).clamp(0, self.size - 1)
        met = self.pos[:, 0] == self.pos[:, 1]
        waited = (self.pos == before).float()
        reward = waited * -WAIT_COST + met.float().unsqueeze(1) * MEET_REWARD
        return reward, met

    def _obs(self) -> Tensor:
        # Agent i sees (own, other): the columns of pos, then the same columns swapped.
        return torch.stack((self.pos, self.pos.flip(1)), dim=2).float() * self._scale

    def _extra_state(self) -> dict[str, Any]:
        return {"pos": self.pos.clone()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.pos = state["pos"].to(self.device, torch.int64).clone()
