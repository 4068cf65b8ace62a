"""PPO with a clipped surrogate, optional value clipping, KL penalty and value warm-up.

:class:`PPOPolicy` holds the model and what acts with it; its update is
:class:`~ding_lite.policy.ppo.update.PPOUpdate`, its settings
:class:`~ding_lite.policy.ppo.settings.PPOSettings`.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import torch

from ding_lite.envs.spaces import ActionSpace
from ding_lite.model import ActorCritic, build_model
from ding_lite.model.normalizer import RunningNorm
from ding_lite.policy.base import POLICY_REGISTRY, Policy
from ding_lite.policy.build import model_arch
from ding_lite.policy.ppo.adam import Adam
from ding_lite.policy.ppo.advantages import AdvantageStep
from ding_lite.policy.ppo.kickstart import Kickstart
from ding_lite.policy.ppo.prepare import RolloutPrep, memory_of
from ding_lite.policy.ppo.settings import PPOSettings, kl_controller
from ding_lite.policy.ppo.update import PPOUpdate
from ding_lite.rl_utils import AdvEstimator, get_adv_estimator, get_policy_loss
from ding_lite.rl_utils.loss_agg import TOKEN_MEAN
from ding_lite.utils.rng import RngStream


@POLICY_REGISTRY.register("ppo")
class PPOPolicy(Policy):
    """Proximal Policy Optimization over any action space the model supports.

    Args:
        cfg: the ``policy`` section of a compiled config (``model``, ``learn``, ``collect``,
            ``eval``; every key present, as ``compile_config`` gives it).
        obs_shape: shape of one observation.
        action_space: the env's action space; picks the model's head.
        device: where the model lives.
        total_iters: iterations the run is planned for (``lr_anneal``, ``entropy_anneal``).
        model: an already built model to use instead of building one from ``cfg.model``.
    """

    def __init__(
        self,
        cfg: Any,
        *,
        obs_shape: tuple[int, ...],
        action_space: ActionSpace,
        device: str | torch.device = "cpu",
        total_iters: int | None = None,
        model: ActorCritic | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.settings = s = PPOSettings.from_cfg(cfg)
        self.device = torch.device(device)
        if model is None:
            model = build_model(obs_shape, action_space, **cfg.model, return_norm=s.reward_scale)
        self.model = model.to(self.device)
        # What rebuilds the model without the env or the config (``ding_lite.load_policy``).
        self.arch = model_arch(
            obs_shape, action_space, {**cfg.model, "return_norm": s.reward_scale}
        )
        self._adv_estimator = get_adv_estimator(s.adv_estimator)
        self._advantages = AdvantageStep(
            self._adv_estimator,
            gamma=s.gamma,
            lam=s.gae_lambda,
            n_steps=s.n_steps,
            horizon=s.bptt_horizon,
            norm_by_std=s.norm_by_std,
            kl=kl_controller(s.kl_in_reward),
            rho_max=float(s.vtrace_rho_max),
            c_max=float(s.vtrace_c_max),
            sequences=s.loss_agg_mode != TOKEN_MEAN,
        )
        self._data_info: dict[str, float] = {}  # the advantage step's, for the next update
        ref_model = None
        if float(s.kl_coef) > 0 or self._advantages.kl is not None:
            ref_model = copy.deepcopy(self.model).requires_grad_(False)
        self._ref_model = ref_model
        self.update = PPOUpdate(
            self.model,
            s,
            policy_loss=get_policy_loss(s.policy_loss),
            normalize=self._adv_estimator.normalize,
            ref_model=ref_model,
            total_iters=total_iters,
            device=self.device,
        )
        self._prep = RolloutPrep(
            self.model,
            self._advantages,
            recompute_values=s.recompute_values,
            proximal=s.proximal,
            ref_logp=self._ref_logp if ref_model is not None else None,
        )
        #: The stream minibatch orders are drawn from (None: torch's global generator); a
        #: pipeline seeds it (``seed_updates``) so both pipelines draw the same orders.
        self.update_rng: RngStream | None = None

    def set_teacher(self, teacher: ActorCritic | None) -> None:
        """Kickstarts the update with a trained teacher, or with None a scripted one whose
        actions come with the rollouts (``policy.learn.kickstart``; see
        :mod:`~ding_lite.policy.ppo.kickstart`); its coefficients come from the config."""
        model = None if teacher is None else teacher.to(self.device)
        self.update.kickstart = Kickstart(model, self.settings.kickstart)

    @property
    def optimizer(self) -> Adam:
        """Adam (or AdamW) over the model's parameters, built on first use (acting never
        builds one)."""
        return self.update.optimizer

    @property
    def skipped_steps(self) -> int:
        """Optimizer steps skipped so far for a non-finite gradient."""
        return self.update.skipped_steps

    @property
    def obs_rms(self) -> RunningNorm | None:
        """Running observation statistics (``policy.model.obs_norm``), in the model."""
        return getattr(self.model, "obs_rms", None)

    @property
    def ret_rms(self) -> RunningNorm | None:
        """Running discounted-return statistics (``policy.learn.reward_scale``)."""
        return getattr(self.model, "ret_rms", None)

    @property
    def adv_estimator(self) -> AdvEstimator:
        """The advantage estimator of the learner's advantage step (``.fn``,
        ``.normalize``, ``.episodic``); a collector ships episode numbers when episodic."""
        return self._adv_estimator

    def _prepare_learn(self, data: Any) -> dict[str, torch.Tensor]:
        """One rollout or a list of them (a parallel learn task's files) refreshed with this
        policy as asked and through the advantage step, as one batch
        (:class:`~ding_lite.policy.ppo.prepare.RolloutPrep`); a batch with ``adv`` passes."""
        batch, self._data_info = self._prep(data)
        return batch

    @torch.no_grad()
    def _ref_logp(self, data: dict[str, torch.Tensor]) -> torch.Tensor:
        """Log-probs of a rollout's actions under the reference policy."""
        assert self._ref_model is not None
        return self._ref_model.get_dist(data["obs"], *memory_of(data)).log_prob(data["action"])

    def _forward_learn(self, data: Any) -> dict[str, float]:
        """One PPO update on ``data`` (a prepared batch, or rollouts: then the advantage
        step runs first), then the rollouts' statistics summaries are merged
        (``obs_norm_update`` / ``ret_norm_update``, one row per rollout): the next policy
        version carries them, while this update used the observations as stored."""
        if isinstance(data, list) or "adv" not in data:
            data = self._prepare_learn(data)
        with self.update_rng or contextlib.nullcontext():
            info = {**self.update(data), **self._data_info}
        self._data_info = {}
        for key, rms in (("obs_norm_update", self.obs_rms), ("ret_norm_update", self.ret_rms)):
            if rms is not None and key in data:
                rms.merge(data[key])
        return info

    @property
    def recurrent(self) -> bool:
        """Whether the model carries a state between steps (``policy.model.core``)."""
        return bool(getattr(self.model, "recurrent", False))

    def initial_state(self, batch: int, device: Any = None) -> torch.Tensor:
        """The recurrent state every episode starts from, ``[batch, state_size]``."""
        return self.model.initial_state(batch, self.device if device is None else device)

    @torch.inference_mode()
    def _forward_collect(
        self, obs: torch.Tensor, deterministic: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.model.act(obs, deterministic=deterministic)

    @torch.inference_mode()
    def _step_collect(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.model.step(obs, state, episode_start)

    @torch.inference_mode()
    def _get_value(
        self,
        obs: torch.Tensor,
        state: torch.Tensor | None = None,
        episode_start: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if state is None:
            return self.model.get_value(obs)
        return self.model.get_value(obs, state, episode_start)

    @torch.inference_mode()
    def _forward_eval(self, obs: torch.Tensor) -> torch.Tensor:
        if self.obs_rms is not None:
            obs = self.obs_rms.normalize(obs)
        action, _, _ = self.model.act(obs, deterministic=self.settings.deterministic)
        return action

    @torch.inference_mode()
    def _step_eval(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.obs_rms is not None:
            obs = self.obs_rms.normalize(obs)
        action, _, _, state = self.model.step(
            obs, state, episode_start, deterministic=self.settings.deterministic
        )
        return action, state

    def state_dict(self) -> dict[str, Any]:
        """Model, optimizer, LR-schedule and KL-penalty state (tensors and numbers only), the
        model's ``arch`` (see :func:`~ding_lite.policy.build.model_arch`), and the advantage
        step's held-back steps and KL-in-reward coefficient when it has them."""
        state: dict[str, Any] = {
            "arch": self.arch,
            "model": self.model.state_dict(),
            **self.update.state_dict(),  # optimizer, schedule, kl_coef, skipped_steps, ref
        }
        if self._advantages.estimator.episodic or self._advantages.kl is not None:
            state["advantage_step"] = self._advantages.state_dict()  # held-back steps, KL coef
        if self.update_rng is not None:
            state["update_rng"] = self.update_rng.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any], model_only: bool = False) -> None:
        self.model.load_state_dict(state["model"])
        if model_only:
            return
        self.update.load_state_dict(state)
        if "advantage_step" in state:
            self._advantages.load_state_dict(state["advantage_step"])
        if self.update_rng is not None and "update_rng" in state:
            self.update_rng.load_state_dict(state["update_rng"])
