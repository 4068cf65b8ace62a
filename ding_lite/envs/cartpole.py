"""CartPole with gymnasium CartPole-v1's dynamics, stepped for all copies at once.

Equations, constants, thresholds, reward (1.0 on every step, the terminating one included)
and the 500-step time limit follow gymnasium's ``CartPoleEnv`` (Barto, Sutton & Anderson
1983, explicit Euler integration).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ding_lite.envs.autoreset import PooledStateEnv, observes_position_only
from ding_lite.envs.base import StepResult
from ding_lite.envs.canvas import Canvas
from ding_lite.envs.spaces import Discrete

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_POLE + MASS_CART
HALF_LENGTH = 0.5  # gymnasium's ``length`` is half the pole's length
POLEMASS_LENGTH = MASS_POLE * HALF_LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
INIT_BOUND = 0.05
# Frames (render): 600 x 400 pixels; the track spans the terminating positions and a margin.
FRAME_WIDTH, FRAME_HEIGHT = 600, 400
PIXELS_PER_METRE = FRAME_WIDTH / (2 * X_THRESHOLD + 1.0)


class CartPoleEnv(PooledStateEnv):
    """Batched CartPole-v1: keep a pole upright by pushing its cart left or right.

    Observation float32 ``[N, 4]``: cart position, cart velocity, pole angle (rad), pole
    angular velocity; with ``observe="position"``, ``[N, 2]``: cart position and pole angle
    only (the velocities hidden, so a policy needs memory). Action ``Discrete(2)``: 0 pushes
    left, 1 pushes right. Episodes end when ``|x| > 2.4`` or ``|theta| > 12 deg``
    (terminated) or after ``max_episode_steps`` (truncated).

    Attributes:
        state: ``[N, 4]`` physical state (x, x_dot, theta, theta_dot) of ``dtype``. Write into
            it or assign a new tensor to place copies anywhere before a step.
    """

    name = "cartpole"
    render_fps = round(1.0 / TAU)  # one frame per step shows the episode in real time

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        max_episode_steps: int | None = 500,
        dtype: torch.dtype = torch.float32,
        observe: str = "full",
        reset_group_size: int = 1,
    ) -> None:
        """Builds ``num_envs`` copies; call :meth:`reset` before stepping.

        Args:
            num_envs: Number of copies ``N``.
            device: Device of all tensors.
            seed: Seed of the first :meth:`reset` called without one.
            max_episode_steps: Truncation limit; gymnasium's CartPole-v1 uses 500.
            dtype: Dtype of the physical state. float64 reproduces gymnasium's numbers to
                rounding; observations are float32 either way.
            observe: ``"full"`` (the four state variables) or ``"position"`` (cart position
                and pole angle: the task then needs memory).
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
            obs_shape=(2,) if self._position_only else (4,),
            action_space=Discrete(2),
            max_episode_steps=max_episode_steps,
            device=device,
            seed=seed,
        )
        # From these initial states an episode lasts at least 8 steps, so each reset gets a
        # pool draw no earlier reset has used.
        self._init_pooled_state(
            low=(-INIT_BOUND,) * 4,
            high=(INIT_BOUND,) * 4,
            dtype=dtype,
            refresh_steps=8,
            group_size=reset_group_size,
        )
        # Persistent buffers: the step writes into them with out= ops, so it allocates only
        # the tensors it hands out, and every view below is built once.
        self._acc = torch.empty(num_envs, 2, dtype=dtype, device=self.device)  # x, theta
        # Scratch for the intermediate terms: reusing memory also spares the page faults that
        # fresh large allocations cost on CPU.
        self._scratch = torch.empty(5, num_envs, dtype=dtype, device=self.device).unbind(0)
        self._abs_pos = torch.empty(num_envs, 2, dtype=dtype, device=self.device)
        self._out_of_bounds = torch.empty(num_envs, 2, dtype=torch.bool, device=self.device)
        # Full [N, 2] like _abs_pos, so the compare needs no (slow) broadcasting kernel.
        thresholds = torch.tensor([X_THRESHOLD, THETA_THRESHOLD], dtype=dtype, device=self.device)
        self._thresholds = thresholds.expand(num_envs, 2).contiguous()
        self._force = torch.tensor(
            [-FORCE_MAG / TOTAL_MASS, FORCE_MAG / TOTAL_MASS], dtype=dtype, device=self.device
        )
        self._denom_base = torch.tensor(
            HALF_LENGTH * 4.0 / 3.0 / GRAVITY, dtype=dtype, device=self.device
        )
        # Views of the persistent buffers, built once: each costs as much as a small op.
        st = self._state
        self._theta, self._theta_dot = st[:, 2], st[:, 3]
        self._velocities = st[:, 1::2]  # (x_dot, theta_dot)
        self._x_acc, self._theta_acc = self._acc.unbind(1)
        self._next_pos, self._next_vel = self._next[:, 0::2], self._next[:, 1::2]
        # Positions step as one contiguous op over the flat state shifted by one element:
        # next[k] = state[k] + tau * state[k + 1] gives x + tau x_dot and theta + tau theta_dot
        # in the position columns; the velocity columns get junk the velocity step overwrites.
        flat = st.view(-1)
        self._flat_head, self._flat_tail = flat[:-1], flat[1:]
        self._next_head = self._next.view(-1)[:-1]
        # Both flags of a row read as one int16, so "either is set" is one cast to bool.
        self._either_out = self._out_of_bounds.view(torch.int16).squeeze(1)
        self._reward_like = torch.empty(num_envs, dtype=torch.float32, device=self.device)
        # 0-dim operands: a Python scalar is wrapped into a new tensor on every call.
        self._one_length = torch.ones((), dtype=torch.int64, device=self.device)
        self._set_max_length()
        # torch.where on one 16- or 32-byte element per row (see RowSelect), called directly.
        self._rows_where = self._select_reset_rows.where_args()

    def _set_max_length(self) -> None:
        # max_episode_steps as a 0-dim tensor, rebuilt by step() if the attribute changes.
        limit = self._max_length_of = self.max_episode_steps
        self._max_length = (
            None if limit is None else torch.tensor(limit, dtype=torch.int64, device=self.device)
        )

    def step(self, action: Tensor) -> StepResult:
        """Same contract as :meth:`TensorVectorEnv.step`, inlined for speed.

        At small and medium ``N`` the step costs more in per-op dispatch and Python calls than
        in arithmetic, so this does the base class's step, autoreset and episode statistics in
        one body with as few ops as possible. The reward is 1 on every step, so an episode's
        return is its length: only the length is accumulated, and the return is handed out
        as its float32 copy (exact up to 2**24 steps, the accumulated float32 sum's limit).
        """
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        if type(action) is not Tensor or action.device != self.device:
            action = torch.as_tensor(action, device=self.device)
        if action.shape != self._action_shape:
            raise ValueError(
                f"{self.name}: {self.action_space} action must have shape "
                f"{list(self._action_shape)}, got {list(action.shape)}"
            )
        if action.dtype != torch.int64:
            action = action.long()
        reward, terminated = self._step_physics(action)
        ep_length = self._ep_length + self._one_length
        if self._max_length_of != self.max_episode_steps:
            self._set_max_length()
        if self._max_length is None:
            truncated = torch.zeros_like(terminated)
            done = terminated.clone()
        else:
            truncated = ep_length.ge(self._max_length)
            done = torch.bitwise_or(terminated, truncated)
        # Autoreset: _next holds the stepped state; _state gets it with finished rows taken
        # from the pool (PooledStateEnv._reset_state, inlined).
        pool_rows, next_rows, state_rows, mask_dims = self._rows_where
        torch.where(
            done if mask_dims == 1 else done.unsqueeze(1), pool_rows, next_rows, out=state_rows
        )
        self._pool.advance(done)
        if self._position_only:
            obs, final_obs = self._obs_of(self._state), self._obs_of(self._next)
        elif self.dtype == torch.float32:
            obs, final_obs = self._state.clone(), self._next.clone()
        else:
            obs, final_obs = self._state.to(torch.float32), self._next.to(torch.float32)
        torch.where(done, self._zero_length, ep_length, out=self._ep_length)
        episode = {"return": ep_length.float(), "length": ep_length, "mask": done}
        return (
            obs,
            reward,
            terminated,
            truncated,
            {
                "episode": episode,
                "done": done,
                "final_obs": final_obs,
            },
        )

    def render(self) -> np.ndarray:
        """Copy 0 as it is now, seen from the side: uint8 ``[400, 600, 3]``.

        The cart on its track (ticks mark ``x = +-2.4``, where an episode terminates), the
        pole leaning by its angle (to the right for a positive angle)."""
        x, _, theta, _ = self._state[0].tolist()
        canvas = Canvas(FRAME_WIDTH, FRAME_HEIGHT)
        scale, track_y = PIXELS_PER_METRE, 0.7 * FRAME_HEIGHT
        canvas.rect(0, track_y - 1, FRAME_WIDTH, track_y + 1, (0, 0, 0))
        for limit in (-X_THRESHOLD, X_THRESHOLD):
            tick = FRAME_WIDTH / 2 + limit * scale
            canvas.rect(tick - 1, track_y, tick + 1, track_y + 12, (200, 0, 0))
        cx = FRAME_WIDTH / 2 + x * scale
        half_w, half_h = 0.25 * scale, 0.15 * scale  # a 0.5 m x 0.3 m cart
        canvas.rect(cx - half_w, track_y - 2 * half_h, cx + half_w, track_y, (40, 40, 40))
        axle_y = track_y - 1.5 * half_h
        pole = 2 * HALF_LENGTH * scale
        tip_x, tip_y = cx + pole * math.sin(theta), axle_y - pole * math.cos(theta)
        canvas.segment(cx, axle_y, tip_x, tip_y, 10.0, (204, 153, 102))
        canvas.disc(cx, axle_y, 5.0, (129, 132, 203))
        return canvas.pixels

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        # step() keeps no separate return (it equals the length); report it for checkpoints.
        state["episode_return"] = self._ep_length.to(torch.float32)
        return state

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        # gymnasium's equations with the constant factors regrouped so that every line is a
        # single fused op; the results agree with gymnasium's to rounding.
        cos, sin, sq, temp, denom = self._scratch
        theta_dot = self._theta_dot
        torch.cos(self._theta, out=cos)
        torch.sin(self._theta, out=sin)
        torch.mul(theta_dot, theta_dot, out=sq)
        # temp = (force + polemass_length * theta_dot^2 * sin) / total_mass
        torch.index_select(self._force, 0, action, out=temp)
        temp.addcmul_(sq, sin, value=POLEMASS_LENGTH / TOTAL_MASS)
        # theta_acc = (g sin - cos temp) / (l (4/3 - m_pole cos^2 / total_mass)), with
        # numerator and denominator divided by g.
        numer = sin.addcmul_(cos, temp, value=-1.0 / GRAVITY)  # sin is not needed after this
        torch.addcmul(
            self._denom_base,
            cos,
            cos,
            value=-HALF_LENGTH * MASS_POLE / TOTAL_MASS / GRAVITY,
            out=denom,
        )
        torch.div(numer, denom, out=self._theta_acc)
        # x_acc = temp - polemass_length * theta_acc * cos / total_mass
        torch.addcmul(
            temp, self._theta_acc, cos, value=-POLEMASS_LENGTH / TOTAL_MASS, out=self._x_acc
        )
        # Explicit Euler, x and theta together: position += tau * velocity (the old one),
        # velocity += tau * acceleration.
        torch.add(self._flat_head, self._flat_tail, alpha=TAU, out=self._next_head)
        torch.add(self._velocities, self._acc, alpha=TAU, out=self._next_vel)
        # Terminated when |x| > 2.4 or |theta| > 12 degrees.
        torch.abs(self._next_pos, out=self._abs_pos)
        torch.gt(self._abs_pos, self._thresholds, out=self._out_of_bounds)
        terminated = self._either_out.bool()
        reward = torch.ones_like(self._reward_like)  # 1 on every step, the last included
        return reward, terminated

    def _obs_of(self, state: Tensor) -> Tensor:
        if self._position_only:  # x and theta, the even columns, in fresh memory
            columns = state[:, 0::2].clone(memory_format=torch.contiguous_format)
            return columns.to(torch.float32)
        return _float32_copy(state)


def _float32_copy(t: Tensor) -> Tensor:
    # clone() skips the dtype-conversion machinery of to(copy=True) and is about 2x faster.
    return t.clone() if t.dtype == torch.float32 else t.to(torch.float32)
