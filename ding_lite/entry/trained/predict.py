"""Using a trained policy: ``ding_lite.load_policy(path).predict(obs)``.

A checkpoint records the observation shape, the action space and the model's options
(``arch`` in its policy state), so the policy is rebuilt without building an env or reading
the experiment's config. Observations are normalized with the statistics saved with the
policy (frozen); Box actions come back clipped to the space's bounds.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ding_lite.envs.spaces import ActionSpace, Box
from ding_lite.model import ActorCritic
from ding_lite.worker.learner.checkpoint import read_checkpoint
from ding_lite.worker.learner.saved_policy import find_checkpoint, rebuild_model

__all__ = ["TrainedPolicy", "TrainedRun", "find_checkpoint", "load_policy"]


class TrainedPolicy:
    """A trained policy that maps observations to actions, as the env takes them.

    Built by :func:`load_policy`. Attributes: ``obs_shape`` (one observation), ``action_space``
    (a ``ding_lite.envs.spaces`` space), ``checkpoint`` (the file read), ``train_iter``.
    """

    def __init__(
        self,
        model: ActorCritic,
        obs_shape: tuple[int, ...],
        action_space: ActionSpace,
        checkpoint: Path | None,
        train_iter: int,
    ) -> None:
        self.model = model.eval().requires_grad_(False)
        self.obs_shape = obs_shape
        self.action_space = action_space
        self.checkpoint = checkpoint
        self.train_iter = train_iter
        self.device = next(model.parameters()).device
        self._low = self._high = None
        if isinstance(action_space, Box):
            self._low = torch.tensor(action_space.low, device=self.device)
            self._high = torch.tensor(action_space.high, device=self.device)

    @property
    def recurrent(self) -> bool:
        """Whether the policy has memory: then :meth:`predict` takes and returns its state."""
        return bool(getattr(self.model, "recurrent", False))

    def predict(
        self,
        obs: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> Any:
        """Actions for one observation or a batch.

        A feed-forward policy returns the actions. A recurrent one (``policy.model.core``)
        returns ``(actions, state)``, as SB3-contrib's RecurrentPPO does: pass the state back
        with the next observation; ``state=None`` starts every row from zeros, and
        ``episode_start`` (bools, one per row) zeroes the rows whose episode starts with
        ``obs``.

        Args:
            obs: numpy array, torch tensor or nested lists: one observation of shape
                ``obs_shape`` or a batch ``[B, *obs_shape]``, raw (as the env returns it;
                the saved normalization is applied here).
            state: a recurrent policy's state as the last call returned it, or None.
            episode_start: a recurrent policy's episode starts (None: none but the rows that
                ``state=None`` starts anyway).
            deterministic: the most likely action (the mean for Box) instead of a sample.

        Returns:
            A torch tensor for a torch input, else a numpy array: for one observation, an
            int64 scalar array (Discrete), ``[d]`` float32 (Box, clipped to its bounds) or
            ``[k]`` (Hybrid, MultiDiscrete); for a batch, the same with a leading ``B``.
            A recurrent policy returns ``(actions, state)``, the state of the same kind
            (``[state_size]`` for one observation, ``[B, state_size]`` for a batch).

        Raises:
            ValueError: an observation of another shape, or a state or episode_start that
                does not fit it (or is given to a feed-forward policy).
        """
        is_torch = isinstance(obs, torch.Tensor)
        x = _as_float(obs, self.device)
        single = tuple(x.shape) == self.obs_shape
        if not single and tuple(x.shape[1:]) != self.obs_shape:
            raise ValueError(
                f"observation of shape {list(x.shape)} is neither one observation "
                f"{list(self.obs_shape)} nor a batch [B, {', '.join(map(str, self.obs_shape))}]"
            )
        if not self.recurrent and (state is not None or episode_start is not None):
            raise ValueError("this policy has no memory: predict takes no state or episode_start")
        with torch.inference_mode():
            x = self.model.normalize_obs(x.unsqueeze(0) if single else x)
            if self.recurrent:
                h, starts = self._memory(state, episode_start, x.shape[0], single)
                action, _, _, h = self.model.step(x, h, starts, deterministic=deterministic)
            else:
                action = self.model.act(x, deterministic=deterministic)[0]
            if self._low is not None:
                action = torch.clamp(action, self._low, self._high)
        action = action[0] if single else action
        out = action.to(obs.device) if is_torch else action.cpu().numpy()
        if not self.recurrent:
            return out
        h = h[0] if single else h
        return out, (h.to(obs.device) if is_torch else h.cpu().numpy())

    def _memory(
        self, state: Any, episode_start: Any, batch: int, single: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The state ``[B, state_size]`` and episode starts ``[B]`` a step begins from."""
        size = self.model.state_size
        if state is None:
            h = self.model.initial_state(batch, self.device)
        else:
            h = _as_float(state, self.device)
            h = h.unsqueeze(0) if single else h
            if tuple(h.shape) != (batch, size):
                want = [size] if single else [batch, size]
                raise ValueError(f"state of shape {list(h.shape)} does not fit; expected {want}")
        if episode_start is None:
            return h, torch.zeros(batch, dtype=torch.bool, device=self.device)
        starts = _as_float(episode_start, self.device).reshape(-1) != 0
        if starts.shape[0] != batch:
            raise ValueError(f"episode_start has {starts.shape[0]} entries for {batch} rows")
        return h, starts

    def __repr__(self) -> str:
        return (
            f"TrainedPolicy(obs_shape={self.obs_shape}, action_space={self.action_space}, "
            f"checkpoint='{self.checkpoint}', train_iter={self.train_iter})"
        )


def load_policy(path: str | Path, device: str | torch.device = "cpu") -> TrainedPolicy:
    """Loads a trained policy from a checkpoint file or a run dir (see :func:`find_checkpoint`).

    Args:
        path: a ``.pt`` checkpoint, a run dir or its ``ckpt`` folder.
        device: where the model runs.

    Returns:
        A :class:`TrainedPolicy`; ``predict(obs)`` gives actions.

    Raises:
        CheckpointError: missing, unreadable, or written before checkpoints recorded their
            spaces (evaluate those with ``ding-lite eval``).
    """
    path, state = read_checkpoint(find_checkpoint(path))
    model, obs_shape, space = rebuild_model(path, state)
    return TrainedPolicy(model.to(device), obs_shape, space, path, int(state.get("train_iter", 0)))


def _as_float(value: Any, device: torch.device) -> torch.Tensor:
    """A numpy array, tensor or nested lists as a float32 tensor on ``device``."""
    x = value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    return x.to(device=device, dtype=torch.float32)


class TrainedRun:
    """What ``serial_pipeline`` returns: the trained policy, ready to predict, and its run.

    Any other attribute is the trained policy's (``optimizer``, ``learn_mode``, ...), so
    code written for the policy the pipeline used to return keeps working.

    Attributes:
        policy: the trained :class:`~ding_lite.policy.Policy` (``learn_mode``,
            ``collect_mode``, ``eval_mode``).
        model: its actor-critic network (``policy.model``).
        result: the figures written to ``result.json``.
        run_dir: the run's experiment dir.
        obs_shape, action_space: one observation's shape and the env's action space.
    """

    def __init__(
        self,
        policy: Any,
        obs_shape: tuple[int, ...],
        action_space: ActionSpace,
        result: dict[str, Any],
    ) -> None:
        self.policy = policy
        self.model = policy.model
        self.result = result
        self.run_dir = Path(result["exp_dir"])
        self.obs_shape = tuple(obs_shape)
        self.action_space = action_space
        self._trained: TrainedPolicy | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("policy", "_trained"):
            raise AttributeError(name)  # not yet set (copy, pickle): no recursion
        return getattr(self.policy, name)

    def predict(
        self,
        obs: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> Any:
        """Actions for one observation or a batch (and the state, for a recurrent policy),
        as :meth:`TrainedPolicy.predict` gives them for a checkpoint of this run (a frozen
        copy of the final model acts)."""
        if self._trained is None:
            model = copy.deepcopy(self.model)
            self._trained = TrainedPolicy(
                model, self.obs_shape, self.action_space, None, self.result["train_iter"]
            )
        return self._trained.predict(obs, state, episode_start, deterministic)

    def __repr__(self) -> str:
        return (
            f"TrainedRun(run_dir='{self.run_dir}', train_iter={self.result['train_iter']}, "
            f"solved={self.result['solved']})"
        )
