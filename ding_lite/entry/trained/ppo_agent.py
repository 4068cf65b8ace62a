"""``PPOAgent``: flies one side of the air-combat env with a trained ding_lite policy.

Its package (:mod:`ding_lite.entry.trained`) registers it as the ``"ppo"`` agent of
:mod:`ding_lite.envs.aircombat.agents` (``opponent=ppo``): loading a checkpoint needs the
config, policy and checkpoint code, which the envs never import, so the agent and its
registration live with the entry points.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor

from ding_lite.config.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.aircombat.agents import Action, Agent
from ding_lite.policy import policy_from_checkpoint
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.learner.base_learner import read_checkpoint

if TYPE_CHECKING:
    from ding_lite.envs.aircombat.env import AirCombatEnv


class PPOAgent(Agent):
    """Acts with the model of a checkpoint trained on an air-combat experiment.

    The policy's action maps to the agent's dict by its width: ``[rudder, fire]`` (the
    experiment fixed the throttle, whose value is used) or ``[rudder, throttle, fire]``.
    The model's own observation is the side's ``[N, 10]`` observation, which is the same
    for either side, so a policy trained as P1 can fly P2. Observations are normalized with
    the statistics saved in the checkpoint (``policy.model.obs_norm``), as the policy saw
    them in training. A recurrent policy (``policy.model.core``) carries its state per
    copy: zeroed where the env resets a copy (:meth:`reset`), saved with the env's state.

    Args:
        num_envs: Number of env copies ``N``.
        device: Device of the model and of the observations it gets.
        seed: Seed of the agent's own generator (sampled actions only).
        ckpt: A checkpoint file, or a folder (its newest ``ckpt_iter*.pt``). Required.
        config: The experiment the checkpoint was trained with (name, file or dict).
        deterministic: True acts with the most likely action; False samples, from a stream
            seeded by ``seed``, so the caller's global RNG is neither used nor advanced.
            None (default): as the experiment evaluates (``policy.eval.deterministic``).
        overrides: Dotted overrides of ``config``, as for the pipelines.

    Attributes:
        policy: The loaded policy.
        checkpoint: The checkpoint file read.
        train_iter: The checkpoint's iteration.
        throttle: The fixed throttle used with a two-column action.
    """

    def __init__(
        self,
        *,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int = 0,
        ckpt: str | Path | None = None,
        config: str | Mapping = "aircombat_ppo",
        deterministic: bool | None = None,
        overrides: Iterable[str] | Mapping = (),
    ) -> None:
        super().__init__(num_envs=num_envs, device=device, seed=seed)
        if ckpt is None:
            raise ValueError(
                "agent 'ppo' needs ckpt=PATH (a checkpoint file or a ckpt/ folder); in a "
                "config: env.kwargs.opponent_kwargs.ckpt=PATH"
            )
        cfg = compile_config(config, overrides)
        if cfg.env.name != "aircombat":
            raise ConfigError(
                f"agent 'ppo' needs an aircombat experiment; {cfg.exp_name} trains "
                f"env '{cfg.env.name}'"
            )
        self.checkpoint, state = read_checkpoint(ckpt)
        self.train_iter = int(state["train_iter"])
        # A one-copy env with a scripted opponent gives the spaces the policy was built for
        # (its own opponent settings might name this very agent).
        env_kwargs = {
            k: v for k, v in cfg.env.kwargs.items() if k not in ("opponent", "opponent_kwargs")
        }
        probe = cast(
            "AirCombatEnv", create_env("aircombat", 1, opponent="placeholder", **env_kwargs)
        )
        self.policy = policy_from_checkpoint(
            cfg,
            self.checkpoint,
            state,
            obs_shape=probe.obs_shape,
            action_space=probe.action_space,
            device=self.device,
        )
        self.policy.model.eval()
        self.memory = self.policy.model.initial_state(num_envs, self.device)  # [N, size]
        self.starts = torch.ones(num_envs, dtype=torch.bool, device=self.device)
        self.throttle = 1.0 if probe.throttle is None else probe.throttle
        if deterministic is None:
            deterministic = bool(cfg.policy.eval.deterministic)
        self.deterministic = deterministic
        self.generator = torch.Generator()  # on the CPU: it only draws seeds
        self.generator.manual_seed(seed)

    @torch.inference_mode()
    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        x = self.policy.model.normalize_obs(obs)
        if self.deterministic:
            action = self._step(x, deterministic=True)
        else:
            action = self._sample(x)
        rudder, fire = action[:, 0], action[:, -1]
        if action.shape[1] == 3:
            throttle = action[:, 1]
        else:
            throttle = torch.full_like(rudder, self.throttle)
        return {"rudder": rudder, "throttle": throttle, "fire": fire}

    def _step(self, x: Tensor, deterministic: bool = False) -> Tensor:
        """The actions for normalized observations, the memory carried (a feed-forward
        model's is empty)."""
        action, _, _, self.memory = self.policy.model.step(
            x, self.memory, self.starts, deterministic=deterministic
        )
        self.starts = torch.zeros_like(self.starts)
        return action

    def _sample(self, x: Tensor) -> Tensor:
        """Samples with torch's global RNG, seeded from the agent's own generator and
        restored afterwards."""
        seed = int(torch.randint(2**62, (1,), generator=self.generator))
        devices = [x.device] if x.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            return self._step(x)

    def reset(self, env_mask: Tensor | None = None) -> None:
        """The copies in ``env_mask`` (None: all) start a new episode: their memory is
        zeroed at the next step."""
        if env_mask is None:
            self.starts = torch.ones_like(self.starts)
        else:
            self.starts = self.starts | env_mask.to(self.starts.device)

    def to(self, device: str | torch.device) -> Agent:
        super().to(device)
        self.policy.model.to(self.device)
        self.policy.device = self.device
        self.memory, self.starts = self.memory.to(self.device), self.starts.to(self.device)
        return self

    def state_dict(self) -> dict[str, Any]:
        """The sampling generator's state and each copy's memory (and which copies start
        an episode at the next step); the weights stay in the checkpoint."""
        memory = {"memory": self.memory.cpu(), "starts": self.starts.cpu()}
        return {"generator": self.generator.get_state(), **memory}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"].cpu())
        if "memory" in state:  # not in a state saved before the agent had memory
            self.memory = state["memory"].to(self.device, self.memory.dtype)
            self.starts = state["starts"].to(self.device, torch.bool)
