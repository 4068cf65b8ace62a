"""``matrix_game``: a symmetric two-player zero-sum matrix game, one move an episode.

The league's small proving ground (issue 41): plain self-play cycles on a game whose
payoffs are uneven, and a league's main policy should come near its mixed equilibrium,
whose exploitability :mod:`ding_lite.league.matrix` computes exactly from the policy's
action probabilities.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.spaces import Discrete

#: Bundled payoffs: ``payoff[i][j]`` is what a player gains playing ``i`` against ``j``.
PAYOFFS: dict[str, list[list[float]]] = {
    # rock, paper, scissors: the equilibrium is uniform
    "rps": [[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]],
    # rock's win over scissors pays 2: the equilibrium is (1/4, 1/2, 1/4), and a policy
    # that plays the uniform strategy loses 1/3 a game to one that always plays paper
    "biased_rps": [[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]],
}


class MatrixGameEnv(TensorVectorEnv):
    """Two players each choose one of ``n`` actions at once; the episode then ends.

    ``num_agents = 2``, one policy for both sides (what each sees is the same):

    - Observation float32 ``[N, 2, 1]``: a constant 1 (a one-move game has no state).
    - Action ``Discrete(n)`` per agent, ``[N, 2]``.
    - Reward float32 ``[N, 2]``: ``payoff[a0][a1]`` to agent 0 and its negation to agent 1.
    - Every step terminates the episode; ``info["episode"]["outcome"]`` is ``[N, 2]``, +1
      win, -1 loss, 0 draw from each agent's side (the sign of its reward).

    Args:
        num_envs: Number of copies ``N``.
        device: Device of all tensors.
        seed: Kept for the registry's interface; the env draws no random numbers.
        payoff: A name of :data:`PAYOFFS` or the matrix itself (square, zero-sum
            symmetric).

    Raises:
        ValueError: an unknown name, or a matrix that is not square and zero-sum symmetric.
    """

    name = "matrix_game"
    num_agents = 2

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        payoff: str | list[list[float]] = "biased_rps",
    ) -> None:
        matrix = payoff_matrix(payoff)
        super().__init__(
            num_envs=num_envs,
            obs_shape=(1,),
            action_space=Discrete(len(matrix)),
            max_episode_steps=None,  # every step terminates
            device=device,
            seed=seed,
        )
        self.payoff = torch.tensor(matrix, dtype=torch.float32, device=self.device)
        self._outcome = torch.zeros(num_envs, 2, device=self.device)

    def _reset_state(self, mask: Tensor | None) -> None:
        pass  # nothing to reset: a one-move game has no state

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        gain = self.payoff[action[:, 0], action[:, 1]]
        reward = torch.stack((gain, -gain), dim=1)
        self._outcome = torch.sign(reward)
        return reward, torch.ones(self.num_envs, dtype=torch.bool, device=self.device)

    def _obs(self) -> Tensor:
        return torch.ones(self.num_envs, 2, 1, device=self.device)

    def step(self, action: Tensor) -> StepResult:
        obs, reward, terminated, truncated, info = super().step(action)
        info["episode"]["outcome"] = self._outcome
        return obs, reward, terminated, truncated, info


def payoff_matrix(payoff: Any) -> list[list[float]]:
    """The matrix a payoff argument names (a key of :data:`PAYOFFS`) or gives, checked.

    Raises:
        ValueError: an unknown name, or a matrix that is not square and zero-sum symmetric.
    """
    if isinstance(payoff, str):
        if payoff not in PAYOFFS:
            raise ValueError(f"matrix_game: unknown payoff {payoff!r}; one of {', '.join(PAYOFFS)}")
        return PAYOFFS[payoff]
    try:
        matrix = [[float(v) for v in row] for row in payoff]
    except (TypeError, ValueError):
        raise ValueError("matrix_game: payoff must be a name or a list of rows") from None
    n = len(matrix)
    square = n >= 2 and all(len(row) == n for row in matrix)
    if not square or any(matrix[j][i] != -matrix[i][j] for i in range(n) for j in range(n)):
        raise ValueError("matrix_game: payoff must be square and zero-sum symmetric")
    return matrix
