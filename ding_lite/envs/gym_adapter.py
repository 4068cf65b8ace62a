"""Any registered gymnasium env behind the ``TensorVectorEnv`` interface (``gym:<id>``).

The copies run in gymnasium's own ``SyncVectorEnv`` (or, with ``vector_mode="async"``, its
``AsyncVectorEnv``: one subprocess per copy) with same-step autoreset; this adapter converts
its numpy results to tensors on the env's device, fills ``info["final_obs"]`` and computes the
episode statistics itself. Observations that are not a ``Box`` are flattened as gymnasium's
``spaces.flatten`` does (one-hot for discrete parts); ``MultiDiscrete`` and ``MultiBinary``
actions become our ``MultiDiscrete``. gymnasium is an optional dependency, imported only when
such an env is built.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.env_modules import refused_message
from ding_lite.envs.frames import check_gym_render_mode, gym_first_frame, headless_defaults
from ding_lite.envs.reset_groups import check_reset_group_size
from ding_lite.envs.spaces import ActionSpace, Box, Discrete, MultiDiscrete

if TYPE_CHECKING:
    from ding_lite.envs.gym_groups import GymResetGroups

#: Batched gymnasium observations -> float32 ``[N, flat dim]``.
BatchFlattener = Callable[[Any], np.ndarray]

VECTOR_MODES = ("sync", "async")
"""How the copies are stepped: ``"sync"`` one after the other in this process, ``"async"``
each in its own subprocess (gymnasium's ``AsyncVectorEnv``)."""


def import_gymnasium() -> ModuleType:
    """Imports gymnasium or explains how to install it."""
    try:
        import gymnasium
    except ImportError as err:
        raise ImportError(
            "gymnasium is required for gym:<id> envs: pip install gymnasium (in a ding_lite "
            "checkout: pip install -e '.[gym]')"
        ) from err
    return gymnasium


def registered_id(gym: ModuleType, env_id: str) -> str:
    """The gymnasium id ``env_id`` names. In gymnasium's ``"module:Id"`` form the module
    must have been imported with :func:`~ding_lite.envs.env_modules.import_env_modules`
    (it registers the id); a name never makes this process import a module.

    Raises:
        ValueError: the module was not allowed, or the id is not registered (with the
            closest registered ids).
    """
    module, sep, name = env_id.rpartition(":")
    if sep:
        refused = refused_message([module], f"env name {'gym:' + env_id!r}")
        if refused is not None:
            raise ValueError(refused)
    if name not in gym.registry:
        close = difflib.get_close_matches(name, list(gym.registry), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        where = f" (module '{module}' was imported but did not register it)" if sep else ""
        raise ValueError(f"unknown gymnasium env '{name}'{where}{hint}")
    return name


class GymVectorEnv(TensorVectorEnv):
    """``num_envs`` copies of a gymnasium env, stepped on the CPU, returned as tensors.

    Observations: a ``Box`` comes back as float32 ``[N, *shape]``; ``Discrete``,
    ``MultiDiscrete``, ``MultiBinary`` and ``Dict``/``Tuple`` spaces of these (nested too)
    as the float32 ``[N, flat dim]`` that ``gymnasium.spaces.flatten`` gives each copy
    (discrete parts one-hot). Actions: ``Discrete`` (our ``Discrete(n)``, shifted by the
    space's ``start``), a 1-D ``Box``, ``MultiDiscrete`` (its ``nvec`` flattened and shifted
    by ``start``) or ``MultiBinary`` (both our ``MultiDiscrete``, int64 ``[N, k]``).

    ``Box`` actions are clipped to the space's bounds on the way to gymnasium only: the
    tensor passed to :meth:`step` (what a collector stores, with its log-prob) is unchanged.
    """

    clip_actions = True

    def __init__(
        self,
        env_id: str,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        vector_mode: str = "sync",
        reset_group_size: int = 1,
        **env_kwargs: Any,
    ) -> None:
        """Builds the gymnasium vector env.

        Args:
            env_id: A registered gymnasium id, e.g. ``"CartPole-v1"``, or gymnasium's
                ``"module:Id"`` form, where ``module`` (which registers ``Id``) must have
                been imported with :func:`~ding_lite.envs.env_modules.import_env_modules`.
            num_envs: Number of copies ``N``.
            device: Device of the returned tensors.
            seed: Seed of the first :meth:`reset` called without one.
            vector_mode: ``"sync"`` steps the copies one after the other in this process;
                ``"async"`` steps each in its own subprocess. For the same seeds and actions
                both give the same trajectories.
            reset_group_size: Copies ``i`` with equal ``i // reset_group_size`` reset their
                k-th episodes with the same seed, so they start alike; 1: off, copy ``i``
                seeded ``seed + i`` (see :mod:`ding_lite.envs.gym_groups`).
            **env_kwargs: Passed to ``gymnasium.make`` for every copy, e.g.
                ``max_episode_steps`` or the env's own options. ``render_mode="rgb_array"``
                lets :meth:`render` draw copy 0 (see :mod:`ding_lite.envs.frames`).

        Raises:
            ImportError: gymnasium, or a dependency of this env (e.g. Box2D), is not
                installed; the message says what to pip install.
            ValueError: Unknown id, module or vector mode, a space this adapter cannot
                translate, or a ``reset_group_size`` that does not divide ``num_envs``.
            TypeError: An option the gymnasium env does not accept.
        """
        gym = import_gymnasium()
        name = env_id
        env_id = registered_id(gym, env_id)
        if vector_mode not in VECTOR_MODES:
            known = ", ".join(repr(m) for m in VECTOR_MODES)
            raise ValueError(f"unknown vector_mode {vector_mode!r}; known: {known}")
        self.reset_group_size = check_reset_group_size(f"gym:{name}", num_envs, reset_group_size)
        self._groups: GymResetGroups | None = None
        if reset_group_size > 1:
            from ding_lite.envs.gym_groups import GymResetGroups

            self._groups = GymResetGroups(num_envs, reset_group_size)
        self.render_mode = env_kwargs.get("render_mode")
        if self.render_mode is not None:
            check_gym_render_mode(gym, env_id, f"gym:{name}", self.render_mode)
            headless_defaults()  # before any copy (or subprocess) starts
        try:
            env = gym.make_vec(
                env_id,
                num_envs=num_envs,
                vectorization_mode=vector_mode,
                vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
                wrappers=None if self._groups is None else self._groups.wrappers,
                **env_kwargs,
            )
        except gym.error.DependencyNotInstalled as err:
            raise ImportError(_missing_dependency_message(env_id, err)) from err
        except TypeError as err:
            raise TypeError(
                f"gym:{env_id} rejected option(s) {', '.join(sorted(env_kwargs))}: {err}"
            ) from err
        obs_space = env.single_observation_space
        try:
            action_space, self._action_offset = _translate_action_space(
                gym, env.single_action_space, env_id
            )
            if isinstance(obs_space, gym.spaces.Box):
                obs_shape = tuple(obs_space.shape)
                self._flatten: BatchFlattener | None = None
            else:
                self._flatten = _batch_flattener(gym, obs_space, obs_space, env_id)
                obs_shape = (int(gym.spaces.flatdim(obs_space)),)
        except ValueError:
            env.close()
            raise
        # gymnasium.make treats max_episode_steps=None as "the spec's limit".
        max_steps = env_kwargs.get("max_episode_steps") or gym.spec(env_id).max_episode_steps
        super().__init__(
            num_envs=num_envs,
            obs_shape=obs_shape,
            action_space=action_space,
            max_episode_steps=max_steps,
            device=device,
            seed=seed,
        )
        self.name = f"gym:{name}"
        self.vector_mode = vector_mode
        self._env = env
        self._obs_space = obs_space
        self._flatten_one = gym.spaces.flatten
        self._np_action_dtype = env.single_action_space.dtype
        self._np_action_shape = (num_envs, *env.single_action_space.shape)

    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        """Resets every copy; a seed seeds copy ``i`` with ``seed + i`` (gymnasium's rule), or
        with reset groups, the copies of a group with one seed derived from it.

        Returns:
            ``(obs, info)``: obs float32 ``[N, *obs_shape]``; info is empty.
        """
        seed = self._take_seed(seed)
        seeds: int | list[int] | None = seed  # with reset groups, one per copy
        if self._groups is not None:
            seeds = self._groups.seeds(self.generator, seed)
        obs, _ = self._env.reset(seed=seeds)
        self._clear_episodes()
        return self._to_tensor(self._observe(obs), torch.float32), {}

    def step(self, action: Tensor) -> StepResult:
        """Steps every copy; see :class:`TensorVectorEnv` for the returned tensors."""
        return self._from_gym(*self._env.step(self._to_gym(action)))

    def step_async(self, action: Tensor) -> None:
        """Starts a step; with ``vector_mode="async"`` the subprocesses step while the
        caller goes on (gymnasium's ``step_async``), else the step runs in
        :meth:`step_wait`."""
        if self.vector_mode != "async":
            super().step_async(action)
            return
        self._env.step_async(self._to_gym(action))

    def step_wait(self) -> StepResult:
        """Waits for the step :meth:`step_async` started; returns what :meth:`step` does."""
        if self.vector_mode != "async":
            return super().step_wait()
        return self._from_gym(*self._env.step_wait())

    def close(self) -> None:
        """Closes the gymnasium envs."""
        self._env.close()

    def render(self) -> np.ndarray:
        """Copy 0 as gymnasium draws it (``render_mode="rgb_array"``): uint8 ``[H, W, 3]``."""
        return gym_first_frame(self._env, self.name, self.render_mode)

    @property
    def render_fps(self) -> float | None:
        """The gymnasium env's ``metadata["render_fps"]`` (None when it has none)."""
        return self._env.metadata.get("render_fps")

    def _to_gym(self, action: Tensor) -> np.ndarray:
        """``action`` (checked, clipped) as the numpy batch gymnasium takes."""
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        np_action = self._prepare_action(action).detach().cpu().numpy()
        if self._action_offset is not None:
            np_action = np_action + self._action_offset
        return np_action.reshape(self._np_action_shape).astype(self._np_action_dtype, copy=False)

    def _from_gym(
        self, obs: Any, reward: Any, terminated: Any, truncated: Any, gym_info: dict[str, Any]
    ) -> StepResult:
        """gymnasium's step results as our tensors, with final obs and episode statistics."""
        obs = self._observe(obs)
        final_obs = obs
        if "final_obs" in gym_info:
            # gymnasium lists final observations only for the copies that ended.
            ended = gym_info["_final_obs"]
            final_obs = obs.copy()
            final_obs[ended] = np.stack(
                [self._observe_one(o) for o in gym_info["final_obs"][ended]]
            )
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

    def _to_tensor(self, array: np.ndarray, dtype: torch.dtype) -> Tensor:
        return torch.as_tensor(np.asarray(array)).to(device=self.device, dtype=dtype, copy=True)

    def _observe(self, obs: Any) -> np.ndarray:
        """A batch of gymnasium observations as an array ``[N, *obs_shape]``."""
        return obs if self._flatten is None else self._flatten(obs)

    def _observe_one(self, obs: Any) -> np.ndarray:
        """One copy's gymnasium observation as an array ``obs_shape``."""
        if self._flatten is None:
            return np.asarray(obs)
        return np.asarray(self._flatten_one(self._obs_space, obs), dtype=np.float32)

    def _extra_state(self) -> dict[str, Any]:
        if self._groups is None:
            return {}
        return {"reset_groups": self._groups.state_dict(self._env)}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        warnings.warn(
            f"{self.name}: gymnasium's env state cannot be restored; the copies go on from "
            "their current state with the saved episode statistics",
            stacklevel=3,
        )
        if self._groups is not None:  # their next episodes start as in the saved run
            self._groups.load_state_dict(self._env, state.get("reset_groups", {}))

    # The hooks below are unused: reset() and step() talk to gymnasium directly.
    def _reset_state(self, mask: Tensor | None) -> None:
        raise NotImplementedError

    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def _obs(self) -> Tensor:
        raise NotImplementedError


def _translate_action_space(
    gym: ModuleType, space: Any, env_id: str
) -> tuple[ActionSpace, np.ndarray | None]:
    """Maps a gymnasium action space to ours.

    Returns:
        ``(space, offset)``: our space and what to add to our encoding (flat, ``[k]`` for a
        MultiDiscrete) to get gymnasium's, None when nothing.
    """
    spaces = gym.spaces
    if isinstance(space, spaces.Discrete):
        start = np.asarray(space.start, dtype=np.int64)
        return Discrete(int(space.n)), start if start != 0 else None
    if isinstance(space, spaces.Box) and len(space.shape) == 1:
        low = tuple(float(v) for v in space.low)
        high = tuple(float(v) for v in space.high)
        return Box(low=low, high=high), None
    if isinstance(space, spaces.MultiDiscrete):
        start = np.asarray(space.start, dtype=np.int64).reshape(-1)
        nvec = tuple(int(n) for n in space.nvec.reshape(-1))
        return MultiDiscrete(nvec), start if start.any() else None
    if isinstance(space, spaces.MultiBinary):
        return MultiDiscrete((2,) * int(np.prod(space.shape))), None
    raise ValueError(
        f"gym:{env_id} has action space {space}; supported: Discrete, 1-D Box, "
        "MultiDiscrete, MultiBinary"
    )


def _batch_flattener(gym: ModuleType, space: Any, top: Any, env_id: str) -> BatchFlattener:
    """A function that flattens a batch of ``space``'s observations into float32
    ``[N, flatdim(space)]``, row ``i`` equal to ``gymnasium.spaces.flatten(space, obs_i)``.

    Batched observations are what a gymnasium vector env returns: an array ``[N, ...]`` per
    leaf space, in a dict (``Dict``) or tuple (``Tuple``) of them.

    Raises:
        ValueError: ``space`` (``top`` is the whole observation space, for the message)
            holds a space that does not flatten to a fixed-size vector.
    """
    spaces = gym.spaces
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        return lambda x: np.asarray(x, dtype=np.float32).reshape(len(x), -1)
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        # One-hot per part: part j of copy i sets column offsets[j] + x[i, j] - start[j].
        nvec = np.asarray(space.n if isinstance(space, spaces.Discrete) else space.nvec)
        nvec = nvec.reshape(-1).astype(np.int64)
        start = np.asarray(space.start, dtype=np.int64).reshape(-1)
        shift = np.concatenate(([0], np.cumsum(nvec)[:-1])) - start
        width = int(nvec.sum())

        def one_hot(x: Any) -> np.ndarray:
            cols = np.asarray(x, dtype=np.int64).reshape(len(x), -1) + shift
            out = np.zeros((len(cols), width), dtype=np.float32)
            np.put_along_axis(out, cols, 1.0, axis=1)
            return out

        return one_hot
    if isinstance(space, spaces.Tuple):
        parts = [_batch_flattener(gym, s, top, env_id) for s in space.spaces]
        return lambda x: np.concatenate([f(v) for f, v in zip(parts, x, strict=True)], axis=1)
    if isinstance(space, spaces.Dict):
        fields = {k: _batch_flattener(gym, s, top, env_id) for k, s in space.spaces.items()}
        return lambda x: np.concatenate([f(x[k]) for k, f in fields.items()], axis=1)
    raise ValueError(
        f"gym:{env_id} has observation space {top}; supported: Box, Discrete, MultiDiscrete, "
        f"MultiBinary and Dict/Tuple of them, not {type(space).__name__}"
    )


def _missing_dependency_message(env_id: str, err: Exception) -> str:
    """One line saying what ``gym:<env_id>`` lacks and how to install it, from gymnasium's
    ``DependencyNotInstalled`` message (e.g. 'Box2D is not installed, ... `pip install
    "gymnasium[box2d]"`')."""
    text = " ".join(str(err).split())
    missing = re.match(r"(\S+) is not installed", text)
    what = missing.group(1) if missing else "a dependency that is not installed"
    commands = re.findall(r"`(pip install [^`]+)`", text)
    if not commands:
        commands = re.findall(r"pip install \S+", text)
    hint = ", then ".join(commands) if commands else text
    if what == "Box2D":  # its PyPI wheel needs no swig, unlike gymnasium[box2d]'s box2d-py
        hint = "pip install Box2D (in a ding_lite checkout: pip install -e '.[box2d]')"
    return f"gym:{env_id} needs {what}: {hint}"
