"""PPO with a clipped surrogate, optional value clipping, KL penalty and value warm-up."""

from __future__ import annotations

import contextlib
import copy
import math
from typing import Any

import torch
from torch import nn

from ding_lite.envs.spaces import ActionSpace
from ding_lite.model import build_model
from ding_lite.model.normalizer import RunningNorm
from ding_lite.policy.advantages import AdvantageStep, kl_controller
from ding_lite.policy.base import POLICY_REGISTRY, Policy
from ding_lite.policy.build import model_arch
from ding_lite.policy.ppo_update import (
    TERMS,
    LossTerms,
    SegmentSampler,
    batch_stats,
    loss_terms,
    mean_terms,
    minibatches,
)
from ding_lite.policy.prepare import RolloutPrep, memory_of
from ding_lite.rl_utils import ClipRanges, get_adv_estimator, get_policy_loss, needs_proximal
from ding_lite.utils.distributed import all_mean_, average_gradients, world
from ding_lite.utils.rng import RngStream


@POLICY_REGISTRY.register("ppo")
class PPOPolicy(Policy):
    """Proximal Policy Optimization over any action space the model supports.

    Args:
        cfg: the ``policy`` config section (``model``, ``learn``, ``collect``, ``eval``).
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
        model: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        learn = cfg.learn
        self.device = torch.device(device)
        scale = bool(learn.get("reward_scale", False))
        if model is None:
            model = build_model(obs_shape, action_space, **cfg.model, return_norm=scale)
        self.model = model.to(self.device)
        # What rebuilds the model without the env or the config (``ding_lite.load_policy``).
        self.arch = model_arch(obs_shape, action_space, {**cfg.model, "return_norm": scale})
        self._optimizer: torch.optim.Optimizer | None = None
        self._adv_estimator = get_adv_estimator(learn.adv_estimator)
        self._policy_loss = get_policy_loss(learn.get("policy_loss", "ppo_clip"))
        self._clip = ClipRanges.of(learn)
        self._total_iters = total_iters
        self._iter = 0
        self._kl_coef = float(learn.kl_coef)
        self._advantages = AdvantageStep(
            self._adv_estimator,
            gamma=cfg.collect.gamma,
            lam=cfg.collect.gae_lambda,
            n_steps=cfg.collect.n_steps,
            horizon=learn.bptt_horizon,
            norm_by_std=learn.get("norm_by_std", True),
            kl=kl_controller(learn.get("kl_in_reward", {})),
            rho_max=float(learn.get("vtrace_rho_max", 1.0)),
            c_max=float(learn.get("vtrace_c_max", 1.0)),
        )
        self._data_info: dict[str, float] = {}  # the advantage step's, for the next update
        self._ref_model: nn.Module | None = None
        if self._kl_coef > 0 or self._advantages.kl is not None:
            self._ref_model = copy.deepcopy(self.model).requires_grad_(False)
        self._prep = RolloutPrep(
            self.model,
            self._advantages,
            recompute_values=bool(learn.get("recompute_values", False)),
            proximal=needs_proximal(learn.get("policy_loss", "ppo_clip")),
            ref_logp=self._ref_logp if self._ref_model is not None else None,
        )
        #: The stream minibatch orders are drawn from (None: torch's global generator); a
        #: pipeline seeds it (``seed_updates``) so both pipelines draw the same orders.
        self.update_rng: RngStream | None = None
        self._deterministic_eval = cfg.eval.deterministic
        self.skipped_steps = 0
        self.skipped_in_a_row = 0  # reset by every applied step; too many: diverged

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """Adam (or AdamW) over the model's parameters, built on first use.

        Collectors and evaluators never update, so they never build one: building the first
        optimizer of a process makes torch import ``torch._dynamo``, about 2 s of CPU.
        """
        if self._optimizer is None:
            learn = self.cfg.learn
            opt_cls = torch.optim.AdamW if learn.optimizer == "adamw" else torch.optim.Adam
            # foreach: one multi-tensor op per step, the same numbers, ~5% faster on CPU.
            self._optimizer = opt_cls(
                self.model.parameters(),
                lr=learn.learning_rate,
                eps=learn.adam_eps,
                weight_decay=learn.weight_decay,
                foreach=True,
            )
        return self._optimizer

    @property
    def obs_rms(self) -> RunningNorm | None:
        """Running observation statistics (``policy.model.obs_norm``), in the model."""
        return getattr(self.model, "obs_rms", None)

    @property
    def ret_rms(self) -> RunningNorm | None:
        """Running discounted-return statistics (``policy.learn.reward_scale``)."""
        return getattr(self.model, "ret_rms", None)

    @property
    def adv_estimator(self):
        """The advantage estimator of the learner's advantage step (``.fn``,
        ``.normalize``, ``.episodic``); a collector ships episode numbers when episodic."""
        return self._adv_estimator

    def _annealed(self, value: float, anneal: bool) -> float:
        """``value``, or with ``anneal`` its linear decay to 0 over the planned iterations."""
        if not anneal or not self._total_iters:
            return value
        return value * max(0.0, 1.0 - self._iter / self._total_iters)

    def _value_clip_range(self) -> float | None:
        """The value loss's clip range: None without ``value_clip``, else
        ``value_clip_range`` (None there: the ratio's ``clip_ratio``, as PPO's paper does)."""
        learn = self.cfg.learn
        if not learn.value_clip:
            return None
        own = learn.get("value_clip_range")
        return learn.clip_ratio if own is None else float(own)

    def _prepare_learn(self, data: Any) -> dict[str, torch.Tensor]:
        """One rollout or a list of them (a parallel learn task's files) refreshed with this
        policy as asked and through the advantage step, as one batch
        (:class:`~ding_lite.policy.prepare.RolloutPrep`); a batch with ``adv`` passes."""
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
            info = {**self._update(data), **self._data_info}
        self._data_info = {}
        for key, rms in (("obs_norm_update", self.obs_rms), ("ret_norm_update", self.ret_rms)):
            if rms is not None and key in data:
                rms.merge(data[key])
        return info

    def _update(self, data: dict[str, torch.Tensor]) -> dict[str, float]:
        """The epochs of minibatch steps on one batch.

        Each minibatch's :class:`~ding_lite.policy.ppo_update.LossTerms` are weighted and
        summed here; their means (by name) are the returned ``policy_loss``, ``value_loss``,
        ``entropy``, ``approx_kl``, ``clipfrac`` and ``kl_ref``.

        Data-parallel (N ranks in a torch.distributed group, each holding the whole batch):
        every rank takes rank 0's minibatch order, and of each minibatch of m samples rank r
        computes on the r-th of N contiguous parts of m / N. The gradients are averaged over
        the ranks before each step, so every rank takes the step one process would take on
        the whole minibatch. The minibatch's advantage mean and std come from the whole
        minibatch (which every rank holds: the values an all-reduce would give), and the KL
        early stop and the logged means are averaged over the ranks.

        With ``prio_alpha > 0`` each epoch draws its segments by priority (see
        :class:`~ding_lite.policy.ppo_update.SegmentSampler`), and ``prio_is_weight_mean``
        joins the returned means.
        """
        learn = self.cfg.learn
        lr = self._annealed(learn.learning_rate, learn.lr_anneal)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        entropy_weight = self._annealed(learn.entropy_weight, learn.get("entropy_anneal", False))
        mb_size = min(learn.batch_size, data["obs"].shape[0])
        horizon = learn.bptt_horizon
        rank, ranks = world()
        sampler = SegmentSampler(  # checks the segment arithmetic
            data["adv"],
            horizon,
            mb_size,
            ranks,
            alpha=learn.get("prio_alpha", 0.0),
            beta0=learn.get("prio_beta0", 0.6),
            # A run without a planned length stays at progress 0 (beta = prio_beta0).
            progress=self._iter / self._total_iters if self._total_iters else 0.0,
            device=self.device,
        )
        value_only = self._iter < learn.value_warmup_iters
        kl_coef = self._kl_coef
        ref_model = self._ref_model if kl_coef > 0 else None
        kept: list[LossTerms] = []
        grad_norms: list[torch.Tensor] = []
        n_backward = 0
        self.model.train()
        for _epoch in range(learn.n_epochs):
            order, weights = sampler.epoch()
            for mb in minibatches(
                data,
                order,
                mb_size,
                normalize=self._adv_estimator.normalize,
                rank=rank,
                ranks=ranks,
                horizon=horizon,
                weights=weights,
            ):
                terms = loss_terms(
                    self.model,
                    mb,
                    clip_ratio=self._clip,
                    value_clip_range=self._value_clip_range(),
                    ref_model=ref_model,
                    policy_loss=self._policy_loss,
                )
                if value_only:
                    loss = learn.value_weight * terms.v_loss
                else:
                    loss = (
                        terms.pg_loss
                        - entropy_weight * terms.entropy
                        + learn.value_weight * terms.v_loss
                    )
                if ref_model is not None:
                    loss = loss + kl_coef * terms.kl_ref
                (loss / learn.grad_accum_steps).backward()
                n_backward += 1
                kept.append(terms.detach())
                if n_backward % learn.grad_accum_steps == 0:
                    grad_norms.append(self._optimizer_step())
            if n_backward % learn.grad_accum_steps:
                grad_norms.append(self._optimizer_step())
                n_backward = 0
            if (
                learn.target_kl is not None
                and kept
                and all_mean_(kept[-1].approx_kl.clone()).item() > learn.target_kl
            ):
                break
        means = mean_terms(kept)
        self._iter += 1
        self._kl_coef *= learn.kl_coef_decay
        if (
            self._ref_model is not None
            and learn.kl_ref_update_interval
            and self._iter % learn.kl_ref_update_interval == 0
        ):
            self._ref_model.load_state_dict(self.model.state_dict())
        norms = torch.stack(grad_norms) if grad_norms else torch.zeros(1)
        return {
            "policy_loss": means["pg_loss"],
            "value_loss": means["v_loss"],
            "entropy": means["entropy"],
            "approx_kl": means["approx_kl"],
            "clipfrac": means["clipfrac"],
            "kl_ref": means["kl_ref"],
            "kl_coef": kl_coef,
            # explained_variance, data/advantage_mean, data/advantage_std
            **batch_stats(data, critic=getattr(self.model, "critic", True)),
            "grad_norm": float(norms[torch.isfinite(norms)].mean()) if len(norms) else 0.0,
            "learning_rate": lr,
            "minibatches": float(len(kept)),
            "skipped_steps": float(self.skipped_steps),
            # 1.0 once max_skipped_steps steps in a row were skipped: the learner stops.
            "diverged": float(self.skipped_in_a_row >= self.cfg.learn.get("max_skipped_steps", 50)),
            **sampler.info(),  # and the policy loss's own metrics (dual_clip's clipfrac_lower)
            **{f"losses/{name}": value for name, value in means.items() if name not in TERMS},
        }

    def _optimizer_step(self) -> torch.Tensor:
        """Clips and applies the accumulated gradient; skips it (counted) if not finite."""
        max_norm = self.cfg.learn.grad_clip_norm
        average_gradients(self.model.parameters())  # data-parallel ranks: the mean gradient
        grad_norm = nn.utils.clip_grad_norm_(
            self.model.parameters(), max_norm if max_norm is not None else math.inf
        )
        if torch.isfinite(grad_norm):
            self.optimizer.step()
            self.skipped_in_a_row = 0
        else:
            self.skipped_steps += 1
            self.skipped_in_a_row += 1
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm.detach()

    @property
    def recurrent(self) -> bool:
        """Whether the model carries a state between steps (``policy.model.core``)."""
        return bool(getattr(self.model, "recurrent", False))

    def initial_state(self, batch: int, device: Any = None) -> torch.Tensor:
        """The recurrent state every episode starts from, ``[batch, state_size]``."""
        return self.model.initial_state(batch, self.device if device is None else device)

    @torch.inference_mode()
    def _forward_collect(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.model.act(obs)

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
        action, _, _ = self.model.act(obs, deterministic=self._deterministic_eval)
        return action

    @torch.inference_mode()
    def _step_eval(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.obs_rms is not None:
            obs = self.obs_rms.normalize(obs)
        action, _, _, state = self.model.step(
            obs, state, episode_start, deterministic=self._deterministic_eval
        )
        return action, state

    def state_dict(self) -> dict[str, Any]:
        """Model, optimizer, LR-schedule and KL-penalty state (tensors and numbers only), the
        model's ``arch`` (see :func:`~ding_lite.policy.build.model_arch`), and the advantage
        step's held-back steps and KL-in-reward coefficient when it has them."""
        state: dict[str, Any] = {
            "arch": self.arch,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": {"iter": self._iter, "total_iters": self._total_iters or 0},
            "kl_coef": self._kl_coef,
            "skipped_steps": self.skipped_steps,
        }
        if self._ref_model is not None:
            state["ref_model"] = self._ref_model.state_dict()
        if self._advantages.estimator.episodic or self._advantages.kl is not None:
            state["advantage_step"] = self._advantages.state_dict()  # held-back steps, KL coef
        if self.update_rng is not None:
            state["update_rng"] = self.update_rng.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any], model_only: bool = False) -> None:
        self.model.load_state_dict(state["model"])
        if model_only:
            return
        # Optimizer.load_state_dict keeps the given tensors; copy them so a policy loaded
        # from another live policy's state does not share its Adam moments.
        self.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
        self._iter = int(state["schedule"]["iter"])
        self._kl_coef = float(state["kl_coef"])
        self.skipped_steps = int(state.get("skipped_steps", 0))
        if self._ref_model is not None and "ref_model" in state:
            self._ref_model.load_state_dict(state["ref_model"])
        if "advantage_step" in state:
            self._advantages.load_state_dict(state["advantage_step"])
        if self.update_rng is not None and "update_rng" in state:
            self.update_rng.load_state_dict(state["update_rng"])
