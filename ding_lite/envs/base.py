"""``TensorVectorEnv``: a batch of environment copies stepped with tensor ops.

Every input and output is a torch tensor on ``env.device``. Bundled envs step all copies with
a handful of elementwise ops and never loop over copies in Python, so the same code runs on
CPU and CUDA; the step path also avoids host syncs (no ``.item()``, no data-dependent Python
branches) so a CUDA step is queued without waiting for the GPU.

Subclasses own the physical state and implement three hooks; this base class owns seeding,
action checking, time limits, episode statistics and the same-step autoreset.

An env may hold several agents per copy (``num_agents``, default 1). Design: the agent axis
comes right after the copy axis wherever agents differ (obs, action, reward, returns) and is
absent where they cannot (the episode: dones, lengths, masks), so a copy's agents start and
end their episodes together and autoreset stays a per-copy affair. With one agent there is no
agent axis at all, so single-agent envs and their callers see exactly the shapes they always
did. Callers that feed one policy flatten ``[N, A]`` into ``N * A`` rows themselves.
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from torch import Tensor

from ding_lite.envs.spaces import ActionSpace, Box, Discrete, Hybrid, MultiDiscrete

StepResult = tuple[Tensor, Tensor, Tensor, Tensor, dict[str, Any]]


class TensorVectorEnv(abc.ABC):
    """Base class of batched envs whose inputs and outputs are tensors on one device.

    Contract of :meth:`step` (``N = num_envs``; ``[A]`` is the agent axis, present only
    when ``A = num_agents > 1``; see :attr:`batch_shape`):

    - ``obs``: float32 ``[N, [A,] *obs_shape]``. A copy whose episode ended this step
      (terminated or truncated) is reset in the same step, so its row is the first obs of
      its next episode.
    - ``reward``: float32 ``[N, [A]]``, each agent's own reward.
    - ``terminated``, ``truncated``: bool ``[N]``: an episode ends for all agents of a copy
      at once, and autoreset resets the whole copy.
    - ``info["final_obs"]``: float32 ``[N, [A,] *obs_shape]``, the last obs of the episodes
      that ended; rows of copies that did not end equal ``obs``.
    - ``info["episode"]``: ``{"return": float32 [N, [A]], "length": int64 [N], "mask": bool
      [N]}``, the undiscounted return (per agent) and length of the episodes that ended this
      step; only rows where ``mask`` is True are meaningful. An env with winners and losers
      MAY add ``"outcome"``: float32 ``[N, [A]]``, +1 win, -1 loss, 0 draw (from the side of
      the caller, or of each agent), valid where ``mask``; collectors and the evaluator then
      report win, loss and draw rates.
    - ``info["done"]``: ``terminated | truncated``.

    :meth:`step` takes int64 ``[N, [A]]`` (Discrete), int64 ``[N, [A,] k]`` (MultiDiscrete)
    or float ``[N, [A,] dim]`` (Box, Hybrid) actions: ``action_space`` and ``obs_shape``
    describe ONE agent, so one policy serves every agent of every copy.

    Subclasses implement :meth:`_reset_state`, :meth:`_step_physics` and :meth:`_obs`.

    Attributes:
        num_envs: Number of env copies ``N``.
        num_agents: Agents per copy ``A`` (a class attribute or constructor argument;
            default 1). A copy makes ``A`` agent steps per env step.
        device: Device of every tensor the env takes and returns.
        obs_shape: Shape of one agent's observation.
        action_space: What one agent's action is (see ``ding_lite.envs.spaces``).
        max_episode_steps: Episodes are truncated after this many steps; None = never.
        name: Registry name of the env.
        reset_group_size: Copies ``i`` with equal ``i // reset_group_size`` form a reset
            group whose k-th episodes start alike (1: off; see ``envs.reset_groups``).
    """

    name: str = "tensor_env"
    num_agents: int = 1
    reset_group_size: int = 1  # envs that take a reset_group_size argument set their own
    # Clip Box actions to the bounds before the env sees them. The clipped tensor is a new
    # one: the caller's action (what a collector stores and trains on) is left as sampled.
    clip_actions: bool = True
    # The action step_async() keeps for step_wait() (None: no step pending).
    _pending_action: Tensor | None = None

    def __init__(
        self,
        *,
        num_envs: int,
        obs_shape: tuple[int, ...],
        action_space: ActionSpace,
        max_episode_steps: int | None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        num_agents: int | None = None,
    ) -> None:
        """Sets up the bookkeeping shared by all envs.

        Args:
            num_envs: Number of env copies; must be >= 1.
            obs_shape: Shape of one copy's observation.
            action_space: Space of one copy's action.
            max_episode_steps: Truncate episodes after this many steps; None disables it.
            device: Device of the env's tensors and of its random generator.
            seed: Seed used by the first :meth:`reset` called without a seed.
            num_agents: Agents per copy; None takes the class attribute (1 unless the
                subclass declares more). With more than one, obs, actions, rewards and
                episode returns get an agent axis after the copy axis (see the class).

        Raises:
            ValueError: ``num_envs``, ``num_agents`` or ``max_episode_steps`` out of range,
                or an unsupported action space.
        """
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if num_agents is None:
            num_agents = type(self).num_agents
        if isinstance(num_agents, bool) or not isinstance(num_agents, int) or num_agents < 1:
            raise ValueError(f"num_agents must be a positive int, got {num_agents!r}")
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None, got {max_episode_steps}")
        self.num_envs = num_envs
        self.num_agents = num_agents
        self.device = torch.device(device)
        self.obs_shape = tuple(obs_shape)
        self.action_space = action_space
        self.max_episode_steps = max_episode_steps
        self.generator = torch.Generator(device=self.device)
        self._pending_seed = seed
        # Returns are per agent ([N, A]); lengths per copy ([N]): agents end together.
        self._ep_return = torch.zeros(self.batch_shape, dtype=torch.float32, device=self.device)
        self._ep_length = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        # 0-dim zeros: torch.where with a Python scalar builds this tensor on every call.
        self._zero_return = torch.zeros((), dtype=torch.float32, device=self.device)
        self._zero_length = torch.zeros((), dtype=torch.int64, device=self.device)
        self._needs_reset = True
        self._discrete = isinstance(action_space, (Discrete, MultiDiscrete))
        if isinstance(action_space, Discrete):
            self._action_shape: tuple[int, ...] = self.batch_shape
        elif isinstance(action_space, (Box, Hybrid, MultiDiscrete)):
            self._action_shape = (*self.batch_shape, action_space.dim)
        else:
            raise ValueError(f"unsupported action space {action_space!r}")
        self._action_low: Tensor | None = None
        self._action_high: Tensor | None = None
        if isinstance(action_space, Box) and self.clip_actions:
            # Bounds live on the device once, so clipping costs one op and no transfer.
            self._action_low = torch.tensor(action_space.low, device=self.device)
            self._action_high = torch.tensor(action_space.high, device=self.device)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """``(N,)`` with one agent per copy, ``(N, A)`` with more: the leading dims of obs,
        rewards, episode returns and actions."""
        if self.num_agents == 1:
            return (self.num_envs,)
        return (self.num_envs, self.num_agents)

    # ----------------------------------------------------------------- subclass hooks
    @abc.abstractmethod
    def _reset_state(self, mask: Tensor | None) -> None:
        """Draws a fresh initial state for the copies where ``mask`` is True.

        Args:
            mask: bool ``[N]``, or None to reset every copy. Must be handled without a host
                sync (blend with ``torch.where`` rather than indexing with the mask).
        """

    @abc.abstractmethod
    def _step_physics(self, action: Tensor) -> tuple[Tensor, Tensor]:
        """Advances every copy by one step.

        Args:
            action: Checked action: int64 ``[N, [A]]`` (Discrete), int64 ``[N, [A,] k]``
                (MultiDiscrete) or float ``[N, [A,] dim]``, already clipped to the Box bounds
                (``[A]`` only when ``num_agents > 1``).

        Returns:
            ``(reward, terminated)``: float32 ``[N, [A]]`` and bool ``[N]``.
        """

    @abc.abstractmethod
    def _obs(self) -> Tensor:
        """Returns float32 ``[N, [A,] *obs_shape]`` for the current state, in fresh memory."""

    def _autoreset(self, done: Tensor) -> tuple[Tensor, Tensor]:
        """Resets the copies where ``done`` and observes before and after.

        Override when the env can do it cheaper, e.g. by keeping the stepped state apart
        from the reset one.

        Args:
            done: bool ``[N]``, the copies whose episode ended this step.

        Returns:
            ``(obs, final_obs)``, both float32 ``[N, [A,] *obs_shape]`` in fresh memory.
        """
        final_obs = self._obs()
        self._reset_state(done)
        return self._obs(), final_obs

    # ------------------------------------------------------------------- public API
    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        """Resets every copy and the episode statistics.

        Args:
            seed: Reseeds the env's generator so the trajectory is a function of the seed and
                the actions. None continues the generator's stream, except that the first
                reset uses the seed given at construction.

        Returns:
            ``(obs, info)``: obs float32 ``[N, [A,] *obs_shape]``; info is empty.
        """
        seed = self._take_seed(seed)
        if seed is not None:
            self.generator.manual_seed(seed)
        self._reset_state(None)
        self._clear_episodes()
        return self._obs(), {}

    def step(self, action: Tensor) -> StepResult:
        """Steps every copy once and resets the copies whose episode ended.

        Args:
            action: int64 ``[N]`` for a Discrete space, int64 ``[N, k]`` for MultiDiscrete,
                float ``[N, dim]`` for Box/Hybrid; with ``A > 1`` agents, ``[N, A]``,
                ``[N, A, k]`` and ``[N, A, dim]``. Box actions outside the bounds are clipped
                (into a new tensor; ``action`` itself is not changed).

        Returns:
            ``(obs, reward, terminated, truncated, info)``, see the class docstring.

        Raises:
            RuntimeError: :meth:`reset` was never called.
            ValueError: ``action`` has the wrong shape (the message gives the right one).
        """
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        action = self._prepare_action(action)
        reward, terminated = self._step_physics(action)
        ep_length = self._ep_length + 1
        if self.max_episode_steps is None:
            truncated = torch.zeros_like(terminated)
        else:
            truncated = ep_length >= self.max_episode_steps
        done = terminated | truncated
        obs, final_obs = self._autoreset(done)
        info = self._episode_info(reward, ep_length, done)
        info["final_obs"] = final_obs
        return obs, reward, terminated, truncated, info

    def step_async(self, action: Tensor) -> None:
        """Starts :meth:`step` without waiting for it; :meth:`step_wait` returns its result.

        This default only keeps ``action``, and :meth:`step_wait` steps: nothing overlaps
        (a bundled env's step is tensor ops queued on its device anyway). An env whose copies
        step elsewhere (subprocesses) overrides both, so that the caller can work while
        they step, e.g. compute the actions of another group of copies.

        Raises:
            RuntimeError: a step is already pending (call :meth:`step_wait` first).
        """
        if self._pending_action is not None:
            raise RuntimeError(f"{self.name}: a step is pending; call step_wait() first")
        self._pending_action = action

    def step_wait(self) -> StepResult:
        """The result of the step :meth:`step_async` started, as :meth:`step` returns it.

        Raises:
            RuntimeError: no step is pending.
            ValueError: the action given to :meth:`step_async` has the wrong shape.
        """
        action, self._pending_action = self._pending_action, None
        if action is None:
            raise RuntimeError(f"{self.name}: no step is pending; call step_async() first")
        return self.step(action)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue the exact trajectory after a restart.

        Returns:
            Tensors, numbers and None only, so ``torch.load(weights_only=True)`` reads it.
        """
        return {
            "generator": self.generator.get_state(),
            "pending_seed": self._pending_seed,
            "needs_reset": self._needs_reset,
            "episode_return": self._ep_return.clone(),
            "episode_length": self._ep_length.clone(),
            **self._extra_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned.

        Tensors may come back on the CPU (e.g. ``torch.load(map_location="cpu")``); the
        generator state must come from an env on the same device type.

        Raises:
            ValueError: ``state`` comes from an env with other ``num_envs`` or ``num_agents``.
        """
        saved = tuple(state["episode_return"].shape)
        if saved != self.batch_shape:
            raise ValueError(
                f"{self.name}: state holds episode returns of shape {list(saved)}, this env "
                f"keeps {list(self.batch_shape)} (num_envs={self.num_envs}, "
                f"num_agents={self.num_agents}); load it into an env built the same way"
            )
        self.generator.set_state(state["generator"].cpu())
        self._pending_seed = state["pending_seed"]
        self._needs_reset = bool(state["needs_reset"])
        self._ep_return = state["episode_return"].to(self.device, torch.float32).clone()
        self._ep_length = state["episode_length"].to(self.device, torch.int64).clone()
        self._load_extra_state(state)

    def _extra_state(self) -> dict[str, Any]:
        """Subclass state for :meth:`state_dict` (the physical state, reset pool...)."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: B027 (optional hook)
        """Restores what :meth:`_extra_state` returned."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Releases resources; bundled envs hold none beyond tensors."""

    def __repr__(self) -> str:
        agents = f", num_agents={self.num_agents}" if self.num_agents != 1 else ""
        return (
            f"{type(self).__name__}(name={self.name!r}, num_envs={self.num_envs}{agents}, "
            f"device={self.device}, obs_shape={self.obs_shape}, "
            f"action_space={self.action_space}, max_episode_steps={self.max_episode_steps})"
        )

    # ---------------------------------------------------------------------- helpers
    def _take_seed(self, seed: int | None) -> int | None:
        """The seed a reset should use: ``seed``, else the construction seed once."""
        if seed is None:
            seed = self._pending_seed
        self._pending_seed = None
        return seed

    def _clear_episodes(self) -> None:
        """Zeroes the episode statistics after a full reset."""
        self._ep_return.zero_()
        self._ep_length.zero_()
        self._needs_reset = False

    def _episode_info(self, reward: Tensor, ep_length: Tensor, done: Tensor) -> dict[str, Any]:
        """Adds one step to the episode statistics and reports the episodes that ended.

        The finished-episode tensors are new and handed out; the accumulators are updated in
        place, which spares large allocations (and their page faults) at big ``N``.

        Args:
            reward: float32 ``[N, [A]]``, this step's reward (per agent).
            ep_length: int64 ``[N]``, episode lengths including this step.
            done: bool ``[N]``, which episodes ended this step.

        Returns:
            ``{"episode": {"return", "length", "mask"}, "done": done}``.

        Raises:
            RuntimeError: with several agents, ``reward`` is not ``[N, A]`` (a subclass bug;
                broadcasting would otherwise hide it).
        """
        if self.num_agents == 1:
            ep_return = self._ep_return + reward
            torch.where(done, self._zero_return, ep_return, out=self._ep_return)
        else:
            if reward.shape != self._ep_return.shape:
                raise RuntimeError(
                    f"{self.name}: _step_physics returned a reward of shape "
                    f"{list(reward.shape)}, expected {list(self.batch_shape)} (copies, agents)"
                )
            ep_return = self._ep_return + reward
            # A copy's agents end together: one done flag per copy clears all its returns.
            torch.where(done.unsqueeze(1), self._zero_return, ep_return, out=self._ep_return)
        torch.where(done, self._zero_length, ep_length, out=self._ep_length)
        return {"episode": {"return": ep_return, "length": ep_length, "mask": done}, "done": done}

    def _prepare_action(self, action: Tensor) -> Tensor:
        """Moves ``action`` to the device, checks its shape and clips Box actions.

        Only the shape is checked: checking values would need a host sync. Discrete and
        MultiDiscrete actions come back as int64; a clipped Box action is a new tensor.
        """
        action = torch.as_tensor(action, device=self.device)
        if action.shape != self._action_shape:
            agents = f" ({self.num_agents} agents per copy)" if self.num_agents != 1 else ""
            raise ValueError(
                f"{self.name}: {self.action_space} action must have shape "
                f"{list(self._action_shape)}{agents}, got {list(action.shape)}"
            )
        if self._discrete:
            return action if action.dtype == torch.int64 else action.long()
        if self._action_low is not None:
            return torch.clamp(action, self._action_low, self._action_high)
        return action
