"""Pendulum with gymnasium Pendulum-v1's dynamics, stepped for all copies at once.

Constants, cost, clipping, initial distribution and the 200-step time limit follow
gymnasium's ``PendulumEnv``; the episode never terminates, it is only truncated.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from ding_lite.envs.autoreset import PooledStateEnv, observes_position_only
from ding_lite.envs.canvas import Canvas
from ding_lite.envs.spaces import Box

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
MASS = 1.0
LENGTH = 1.0
INIT_THETA = math.pi
INIT_THETA_DOT = 1.0
FRAME_SIZE = 500  # frames (render) are FRAME_SIZE x FRAME_SIZE pixels


class PendulumEnv(PooledStateEnv):
    """Batched Pendulum-v1: swing a pendulum up and hold it with a bounded torque.

    Observation float32 ``[N, 3]``: ``cos(theta)``, ``sin(theta)``, ``theta_dot``; with
    ``observe="position"``, ``[N, 2]``: ``cos(theta)``, ``sin(theta)`` (the angular velocity
    hidden, so a policy needs memory). Action
    ``Box(low=(-2.0,), high=(2.0,))`` of shape ``[N, 1]``, clipped to the bounds. Reward is
    ``-(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2)`` for the state before the
    step; ``theta = 0`` is upright.

    Attributes:
        state: ``[N, 2]`` physical state (theta, theta_dot) of ``dtype``. Write into it or
            assign a new tensor to place copies anywhere before a step.
    """

    name = "pendulum"
    render_fps = round(1.0 / DT)  # one frame per step shows the episode in real time

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        max_episode_steps: int | None = 200,
        g: float = 10.0,
        dtype: torch.dtype = torch.float32,
        observe: str = "full",
        reset_group_size: int = 1,
    ) -> None:
        """Builds ``num_envs`` copies; call :meth:`reset` before stepping.

        Args:
            num_envs: Number of copies ``N``.
            device: Device of all tensors.
            seed: Seed of the first :meth:`reset` called without one.
            max_episode_steps: Truncation limit; gymnasium's Pendulum-v1 uses 200.
            g: Gravitational acceleration.
            dtype: Dtype of the physical state; float64 reproduces gymnasium's numbers.
            observe: ``"full"`` (cos, sin and the angular velocity) or ``"position"`` (cos
                and sin only: the task then needs memory).
            reset_group_size: Copies ``i`` with equal ``i // reset_group_size`` start their
                k-th episodes (counted since the last full reset) from the same state; 1: every
                copy draws its own (see :mod:`ding_lite.envs.reset_groups`).

        Raises:
            ValueError: an unknown ``observe``, or a ``reset_group_size`` that is not a
                positive int dividing ``num_envs``.
        """
        self._position_only = observes_position_only(self.name, observe)
        super().__init__(
            num_envs=num_envs,
            obs_shape=(2,) if self._position_only else (3,),
            action_space=Box(low=(-MAX_TORQUE,), high=(MAX_TORQUE,)),
            max_episode_steps=max_episode_steps,
            device=device,
            seed=seed,
        )
        self.g = g
        self._init_pooled_state(
            low=(-INIT_THETA, -INIT_THETA_DOT),
            high=(INIT_THETA, INIT_THETA_DOT),
            dtype=dtype,
            group_size=reset_group_size,
        )

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        theta, theta_dot = self._state.unbind(1)
        u = action[:, 0].to(self.dtype)
        # angle_normalize: Python-style modulo, as torch.remainder, maps to [-pi, pi).
        angle = torch.remainder(theta + math.pi, 2 * math.pi).sub_(math.pi)
        # reward = -(angle^2 + 0.1 theta_dot^2 + 0.001 u^2), for the state before the step
        reward = angle.mul_(angle).neg_()
        reward.addcmul_(theta_dot, theta_dot, value=-0.1).addcmul_(u, u, value=-0.001)
        # theta_dot' = clip(theta_dot + (3g/(2l) sin(theta) + 3/(m l^2) u) dt, +-max_speed)
        accel = torch.add(
            theta.sin().mul_(3 * self.g / (2 * LENGTH)), u, alpha=3.0 / (MASS * LENGTH**2)
        )
        new_theta_dot = torch.add(theta_dot, accel, alpha=DT, out=self._next[:, 1])
        new_theta_dot.clamp_(-MAX_SPEED, MAX_SPEED)
        torch.add(theta, new_theta_dot, alpha=DT, out=self._next[:, 0])
        terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        return reward.to(torch.float32), terminated

    def render(self) -> np.ndarray:
        """Copy 0 as it is now: uint8 ``[500, 500, 3]``, the pendulum seen face on, upright
        at ``theta = 0``, a positive angle counter-clockwise from there; a grey tick marks
        the upright goal."""
        theta = float(self._state[0, 0])
        canvas = Canvas(FRAME_SIZE, FRAME_SIZE)
        centre, rod = FRAME_SIZE / 2, 0.36 * FRAME_SIZE
        top = centre - rod - 0.03 * FRAME_SIZE  # above the rod's rounded end when upright
        canvas.segment(centre, top - 24, centre, top - 8, 3.0, (160, 160, 160))
        tip_x, tip_y = centre - rod * math.sin(theta), centre - rod * math.cos(theta)
        canvas.segment(centre, centre, tip_x, tip_y, 0.06 * FRAME_SIZE, (204, 77, 77))
        canvas.disc(centre, centre, 6.0, (0, 0, 0))
        return canvas.pixels

    def _obs_of(self, state: Tensor) -> Tensor:
        theta, theta_dot = state.unbind(1)
        shown = [theta.cos(), theta.sin()]
        if not self._position_only:
            shown.append(theta_dot)
        return torch.stack(shown, dim=1).to(torch.float32)
