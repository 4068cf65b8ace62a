"""``PPOAgent``: flies one side of the air-combat env with a trained ding_lite policy.

Its package (:mod:`ding_lite.entry.trained`) registers it as the ``"ppo"`` agent of
:mod:`ding_lite.envs.aircombat.agents` (``opponent=ppo``): loading a checkpoint needs the
config, policy and checkpoint code, which the envs never import, so the agent and its
registration live with the entry points.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ding_lite.config.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.aircombat.agents import Action, Agent
from ding_lite.policy import policy_from_checkpoint
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.learner.base_learner import read_checkpoint


class PPOAgent(Agent):
    """Acts with the model of a checkpoint trained on an air-combat experiment.

    The policy's action maps to the agent's dict by its width: ``[rudder, fire]`` (the
    experiment fixed the throttle, whose value is used) or ``[rudder, throttle, fire]``.
    The model's own observation is the side's ``[N, 10]`` observation, which is the same
    for either side, so a policy trained as P1 can fly P2.

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
        probe = create_env("aircombat", 1, opponent="placeholder", **env_kwargs)
        self.policy = policy_from_checkpoint(
            cfg,
            self.checkpoint,
            state,
            obs_shape=probe.obs_shape,
            action_space=probe.action_space,
            device=self.device,
        )
        if self.policy.recurrent:
            raise ConfigError(
                f"agent 'ppo' plays feed-forward policies; {self.checkpoint} has a recurrent "
                f"core ({cfg.policy.model.core}), which needs its episode starts"
            )
        self.policy.model.eval()
        self.throttle = 1.0 if probe.throttle is None else probe.throttle
        if deterministic is None:
            deterministic = bool(cfg.policy.eval.deterministic)
        self.deterministic = deterministic
        self.generator = torch.Generator()  # on the CPU: it only draws seeds
        self.generator.manual_seed(seed)

    @torch.inference_mode()
    def act(self, obs: Tensor, inbound: Tensor | None = None) -> Action:
        if self.deterministic:
            action, _, _ = self.policy.model.act(obs, deterministic=True)
        else:
            action = self._sample(obs)
        rudder, fire = action[:, 0], action[:, -1]
        if action.shape[1] == 3:
            throttle = action[:, 1]
        else:
            throttle = torch.full_like(rudder, self.throttle)
        return {"rudder": rudder, "throttle": throttle, "fire": fire}

    def _sample(self, obs: Tensor) -> Tensor:
        """Samples with torch's global RNG, seeded from the agent's own generator and
        restored afterwards."""
        seed = int(torch.randint(2**62, (1,), generator=self.generator))
        devices = [obs.device] if obs.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            action, _, _ = self.policy.model.act(obs)
        return action

    def to(self, device: str | torch.device) -> Agent:
        super().to(device)
        self.policy.model.to(self.device)
        self.policy.device = self.device
        return self

    def state_dict(self) -> dict[str, Any]:
        """The sampling generator's state; the weights stay in the checkpoint."""
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"].cpu())
