"""Any registered gymnasium env behind the ``TensorVectorEnv`` interface (``gym:<id>``).

The copies run in gymnasium's own ``SyncVectorEnv`` with same-step autoreset; this adapter
converts its numpy results to tensors on the env's device, fills ``info["final_obs"]`` and
computes the episode statistics itself. gymnasium is an optional dependency, imported only
when such an env is built.
"""

from __future__ import annotations

import difflib
import warnings
from types import ModuleType
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.spaces import ActionSpace, Box, Discrete


def import_gymnasium() -> ModuleType:
    """Imports gymnasium or explains how to install it."""
    try:
        import gymnasium
    except ImportError as err:
        raise ImportError(
            "gymnasium is required for gym:<id> envs; pip install 'ding-lite[gym]'"
        ) from err
    return gymnasium


class GymVectorEnv(TensorVectorEnv):
    """``num_envs`` copies of a gymnasium env, stepped on the CPU, returned as tensors.

    Observations must be a ``Box`` (returned as float32 ``[N, *shape]``); actions a
    ``Discrete`` (our ``Discrete(n)``, shifted by the space's ``start``) or a 1-D ``Box``.
    Actions are passed to gymnasium unclipped, as gymnasium itself would receive them.
    """

    clip_actions = False

    def __init__(
        self,
        env_id: str,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        """Builds the gymnasium vector env.

        Args:
            env_id: A registered gymnasium id, e.g. ``"CartPole-v1"``.
            num_envs: Number of copies ``N``.
            device: Device of the returned tensors.
            seed: Seed of the first :meth:`reset` called without one.
            **env_kwargs: Passed to ``gymnasium.make`` for every copy, e.g.
                ``max_episode_steps`` or the env's own options.

        Raises:
            ImportError: gymnasium is not installed.
            ValueError: Unknown id, or a space this adapter cannot translate.
            TypeError: An option the gymnasium env does not accept.
        """
        gym = import_gymnasium()
        if env_id not in gym.registry:
            close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(f"unknown gymnasium env '{env_id}'{hint}")
        try:
            env = gym.make_vec(
                env_id,
                num_envs=num_envs,
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
                **env_kwargs,
            )
        except TypeError as err:
            raise TypeError(
                f"gym:{env_id} rejected option(s) {', '.join(sorted(env_kwargs))}: {err}"
            ) from err
        obs_space = env.single_observation_space
        if not isinstance(obs_space, gym.spaces.Box):
            env.close()
            raise ValueError(
                f"gym:{env_id} has observation space {obs_space}; only Box is supported"
            )
        try:
            action_space, self._action_start = _translate_action_space(
                gym, env.single_action_space, env_id
            )
        except ValueError:
            env.close()
            raise
        # gymnasium.make treats max_episode_steps=None as "the spec's limit".
        max_steps = env_kwargs.get("max_episode_steps") or gym.spec(env_id).max_episode_steps
        super().__init__(
            num_envs=num_envs,
            obs_shape=tuple(obs_space.shape),
            action_space=action_space,
            max_episode_steps=max_steps,
            device=device,
            seed=seed,
        )
        self.name = f"gym:{env_id}"
        self._env = env
        self._np_action_dtype = env.single_action_space.dtype

    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        """Resets every copy; a seed seeds copy ``i`` with ``seed + i`` (gymnasium's rule).

        Returns:
            ``(obs, info)``: obs float32 ``[N, *obs_shape]``; info is empty.
        """
        obs, _ = self._env.reset(seed=self._take_seed(seed))
        self._clear_episodes()
        return self._to_tensor(obs, torch.float32), {}

    def step(self, action: Tensor) -> StepResult:
        """Steps every copy; see :class:`TensorVectorEnv` for the returned tensors."""
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        action = self._prepare_action(action)
        np_action = action.detach().cpu().numpy()
        if isinstance(self.action_space, Discrete):
            np_action = np_action + self._action_start
        obs, reward, terminated, truncated, gym_info = self._env.step(
            np_action.astype(self._np_action_dtype, copy=False)
        )
        final_obs = obs
        if "final_obs" in gym_info:
            # gymnasium lists final observations only for the copies that ended.
            ended = gym_info["_final_obs"]
            final_obs = obs.copy()
            final_obs[ended] = np.stack(gym_info["final_obs"][ended])
        obs_t = self._to_tensor(obs, torch.float32)
        reward_t = self._to_tensor(reward, torch.float32)
        terminated_t = self._to_tensor(terminated, torch.bool)
        truncated_t = self._to_tensor(truncated, torch.bool)
        done = terminated_t | truncated_t
        info = self._episode_info(reward_t, self._ep_length + 1, done)
        info["final_obs"] = (
            obs_t.clone() if final_obs is obs else self._to_tensor(final_obs, torch.float32)
        )
        return obs_t, reward_t, terminated_t, truncated_t, info

    def close(self) -> None:
        """Closes the gymnasium envs."""
        self._env.close()

    def _to_tensor(self, array: np.ndarray, dtype: torch.dtype) -> Tensor:
        return torch.as_tensor(np.asarray(array)).to(device=self.device, dtype=dtype, copy=True)

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        warnings.warn(
            f"{self.name}: gymnasium's env state cannot be restored; the copies go on from "
            "their current state with the saved episode statistics",
            stacklevel=3,
        )

    # The hooks below are unused: reset() and step() talk to gymnasium directly.
    def _reset_state(self, mask: Tensor | None) -> None:
        raise NotImplementedError

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def _obs(self) -> Tensor:
        raise NotImplementedError


def _translate_action_space(gym: ModuleType, space: Any, env_id: str) -> tuple[ActionSpace, int]:
    """Maps a gymnasium action space to ours; returns it and the Discrete start offset."""
    if isinstance(space, gym.spaces.Discrete):
        return Discrete(int(space.n)), int(space.start)
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
        low = tuple(float(v) for v in space.low)
        high = tuple(float(v) for v in space.high)
        return Box(low=low, high=high), 0
    raise ValueError(
        f"gym:{env_id} has action space {space}; only Discrete and 1-D Box are supported"
    )
