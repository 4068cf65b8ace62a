"""The PPO update's settings, read once from the config, and the config's checks.

:class:`PPOSettings` is every key of ``policy.learn``, ``policy.collect`` and
``policy.eval`` as typed fields, read from a compiled config without a default of its own:
the defaults live in ``ding_lite/config/defaults.py`` only, and ``compile_config`` fills in
every key. :func:`check_update_config` gathers what the update refuses beyond the single
keys' checks of ``ding_lite/config/constraints.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from ding_lite.envs.teachers import scripted_name
from ding_lite.rl_utils import ClipRanges, get_adv_estimator, needs_proximal
from ding_lite.rl_utils.kl_control import KL_IN_REWARD_TYPES, KLController
from ding_lite.rl_utils.kl_estimators import FULL, get_kl_estimator
from ding_lite.rl_utils.loss_agg import LOSS_AGG_MODES, TOKEN_MEAN
from ding_lite.utils.errors import ConfigError


def _from(section: str) -> Any:
    """A field read from ``policy.<section>`` (see :meth:`PPOSettings.from_cfg`)."""
    return field(metadata={"section": section})


@dataclass(frozen=True)
class PPOSettings:
    """What the PPO policy and its update read of the ``policy`` config section.

    Each field is the config key of the same name; its effect is documented beside its
    default in ``ding_lite/config/defaults.py``. Build it with :meth:`from_cfg`.
    """

    n_epochs: int = _from("learn")
    batch_size: int = _from("learn")
    bptt_horizon: int = _from("learn")
    prio_alpha: float = _from("learn")
    prio_beta0: float = _from("learn")
    learning_rate: float = _from("learn")
    lr_anneal: bool = _from("learn")
    optimizer: str = _from("learn")
    weight_decay: float = _from("learn")
    adam_eps: float = _from("learn")
    clip_ratio: float = _from("learn")
    policy_loss: str = _from("learn")
    is_max: float = _from("learn")
    clip_ratio_c: float = _from("learn")
    clip_ratio_low: float | None = _from("learn")
    clip_ratio_high: float | None = _from("learn")
    value_clip: bool = _from("learn")
    value_clip_range: float | None = _from("learn")
    value_weight: float = _from("learn")
    entropy_weight: float = _from("learn")
    entropy_anneal: bool = _from("learn")
    adv_estimator: str = _from("learn")
    vtrace_rho_max: float = _from("learn")
    vtrace_c_max: float = _from("learn")
    norm_by_std: bool = _from("learn")
    recompute_values: bool = _from("learn")
    kl_in_reward: Mapping[str, Any] = _from("learn")
    kl_estimator: str = _from("learn")
    loss_agg_mode: str = _from("learn")
    kickstart: Mapping[str, Any] = _from("learn")
    critic: Mapping[str, Any] = _from("learn")
    grad_clip_norm: float | None = _from("learn")
    grad_accum_steps: int = _from("learn")
    max_skipped_steps: int = _from("learn")
    kl_coef: float = _from("learn")
    kl_coef_decay: float = _from("learn")
    kl_ref_update_interval: int = _from("learn")
    value_warmup_iters: int = _from("learn")
    target_kl: float | None = _from("learn")
    reward_scale: bool = _from("learn")
    n_steps: int = _from("collect")
    gamma: float = _from("collect")
    gae_lambda: float = _from("collect")
    deterministic: bool = _from("eval")

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, Any]) -> PPOSettings:
        """Reads every field from the ``policy`` section of a compiled config.

        Raises:
            KeyError: a key is missing (a partial config: compile it with
                ``ding_lite.config.compile_config``, which adds every default).
        """
        return cls(**{f.name: cfg[f.metadata["section"]][f.name] for f in fields(cls)})

    @cached_property
    def clip(self) -> ClipRanges:
        """The ratio's clip settings the policy loss reads."""
        return ClipRanges(
            clip_ratio=float(self.clip_ratio),
            clip_ratio_low=self.clip_ratio_low,
            clip_ratio_high=self.clip_ratio_high,
            clip_ratio_c=float(self.clip_ratio_c),
            is_max=float(self.is_max),
        )

    @property
    def v_clip(self) -> float | None:
        """The value loss's clip range: None without ``value_clip``, else
        ``value_clip_range`` (None there: the ratio's ``clip_ratio``, as PPO's paper does)."""
        if not self.value_clip:
            return None
        own = self.value_clip_range
        return self.clip_ratio if own is None else float(own)

    @property
    def proximal(self) -> bool:
        """Whether the policy loss clips around the learner's policy (it needs
        ``logp_prox``)."""
        return needs_proximal(self.policy_loss)


def kl_controller(kl_in_reward: Mapping[str, Any]) -> KLController | None:
    """The controller ``policy.learn.kl_in_reward`` asks for; None when its type is "none".

    Raises:
        ConfigError: an unknown type or estimator (``full`` has no distributions here), or
            a coefficient, target or horizon out of range.
    """
    kind = kl_in_reward["type"]
    if kind not in KL_IN_REWARD_TYPES:
        raise ConfigError(
            f"policy.learn.kl_in_reward.type must be one of {', '.join(KL_IN_REWARD_TYPES)}; "
            f"got {kind!r}"
        )
    if kind == "none":
        return None
    coef, target, horizon = (kl_in_reward[k] for k in ("coef", "target", "horizon"))
    for key, value, ok in (
        ("coef", coef, isinstance(coef, int | float) and coef >= 0),
        ("target", target, isinstance(target, int | float) and target > 0),
        ("horizon", horizon, isinstance(horizon, int) and horizon > 0),
    ):
        if isinstance(value, bool) or not ok:
            raise ConfigError(f"policy.learn.kl_in_reward.{key} out of range: {value!r}")
    name = kl_in_reward["estimator"]
    if name == FULL:
        raise ConfigError(
            "policy.learn.kl_in_reward.estimator=full: a step's reward has the log-probs of "
            "its action only; use k1, abs, k2 or k3"
        )
    return KLController(
        coef,
        adaptive=kind == "adaptive",
        target=target,
        horizon=horizon,
        estimator=get_kl_estimator(name),
    )


def check_update_config(cfg: Mapping[str, Any]) -> None:
    """Refuses, in one line, a compiled config the PPO update cannot train with.

    - ``policy.model.critic: false`` (no value head) with a step-level estimator (GAE needs
      values), ``value_clip`` or ``value_warmup_iters > 0``;
    - a grouped estimator (GRPO, RLOO) with ``env.reset_group_size`` 1 (nothing to compare);
    - an episode-level estimator with a recurrent policy (``policy.model.core``) or
      ``bptt_horizon`` above 1: its batches are whole episodes, not fixed segments;
    - ``recompute_values`` with a recurrent policy or without a critic;
    - an unknown ``policy_loss``, ``adv_estimator`` or ``loss_agg_mode``, or a
      ``kl_in_reward`` out of range; a per-sequence ``loss_agg_mode`` where every sequence
      is one step (a step-level estimator with ``bptt_horizon`` 1).

    Raises:
        ConfigError: the first conflict, naming the keys (an unknown name: a
            ``RegistryError``, which is one).
    """
    model, learn = cfg["policy"]["model"], cfg["policy"]["learn"]
    name = learn["adv_estimator"]
    estimator = get_adv_estimator(name)
    needs_proximal(learn["policy_loss"])  # an unknown loss fails here, by name
    get_kl_estimator(learn["kl_estimator"])  # so does an unknown KL estimator
    kl_controller(learn["kl_in_reward"])
    recurrent = model["core"] != "none"
    _check_loss_agg(learn["loss_agg_mode"], estimator.episodic, learn["bptt_horizon"])
    _check_kickstart(learn["kickstart"], model["critic"])
    _check_critic(learn["critic"], model)
    if not model["critic"]:
        conflict = None
        if not estimator.episodic:
            conflict = f"policy.learn.adv_estimator={name} (it needs values)"
        elif learn["value_clip"]:
            conflict = "policy.learn.value_clip=true"
        elif learn["value_warmup_iters"] > 0:
            conflict = f"policy.learn.value_warmup_iters={learn['value_warmup_iters']}"
        if conflict:
            raise ConfigError(
                f"policy.model.critic=false (no value head) does not go with {conflict}; "
                "use a critic-free estimator: reinforce_pp, grpo or rloo"
            )
    if estimator.grouped and cfg["env"]["reset_group_size"] < 2:
        raise ConfigError(
            f"policy.learn.adv_estimator={name} compares the episodes of a group: set "
            "env.reset_group_size to 2 or more (e.g. 8)"
        )
    if estimator.episodic and (recurrent or learn["bptt_horizon"] > 1):
        raise ConfigError(
            f"policy.learn.adv_estimator={name} trains on whole episodes: it needs "
            "policy.model.core=none and policy.learn.bptt_horizon=1"
        )
    if learn["recompute_values"] and recurrent:
        raise ConfigError(
            "policy.learn.recompute_values needs a feed-forward policy (policy.model.core=none): "
            "a recurrent critic's values cannot be recomputed from single steps"
        )
    if learn["recompute_values"] and not model["critic"]:
        raise ConfigError("policy.learn.recompute_values needs a critic (policy.model.critic=true)")


def _check_loss_agg(mode: str, episodic: bool, horizon: int) -> None:
    """Refuses an unknown ``loss_agg_mode``, or a per-sequence one with one-step sequences."""
    if mode not in LOSS_AGG_MODES:
        raise ConfigError(
            f"policy.learn.loss_agg_mode must be one of {', '.join(LOSS_AGG_MODES)}; got {mode!r}"
        )
    if mode != TOKEN_MEAN and not episodic and horizon == 1:
        raise ConfigError(
            f"policy.learn.loss_agg_mode={mode} aggregates per sequence, but with a step-level "
            "estimator a sequence is a BPTT segment and policy.learn.bptt_horizon=1 makes "
            "every sequence one step: set bptt_horizon (e.g. 16), or use an episode-level "
            "estimator (reinforce_pp, grpo, rloo), whose sequences are episodes"
        )


def _check_kickstart(kickstart: Mapping[str, Any], critic: bool) -> None:
    """Refuses kickstarting settings out of range, or a teacher path that is not there."""
    for key, ok in (
        ("coef", lambda v: isinstance(v, int | float) and v >= 0),
        ("value_coef", lambda v: isinstance(v, int | float) and v >= 0),
        ("decay_iters", lambda v: isinstance(v, int) and v >= 0),
    ):
        value = kickstart[key]
        if isinstance(value, bool) or not ok(value):
            raise ConfigError(f"policy.learn.kickstart.{key} out of range: {value!r}")
    teacher = kickstart["teacher"]
    if not teacher:
        return
    if scripted_name(teacher) is not None:  # a scripted teacher: actions, no values
        if kickstart["value_coef"] > 0:
            raise ConfigError(
                f"policy.learn.kickstart.value_coef needs a trained teacher; {teacher} is "
                "a scripted one, which gives actions only"
            )
        return
    if not Path(teacher).exists():
        raise ConfigError(
            f"policy.learn.kickstart.teacher: no such run dir, checkpoint file or scripted "
            f"teacher (agent:NAME): {teacher}"
        )
    if kickstart["value_coef"] > 0 and not critic:
        raise ConfigError(
            "policy.learn.kickstart.value_coef needs a critic (policy.model.critic=true)"
        )


def _check_critic(critic: Mapping[str, Any], model: Mapping[str, Any]) -> None:
    """Refuses ``policy.learn.critic`` settings out of range or that the model cannot take."""
    kind, order, lr = critic["optimizer"], critic["order"], critic["learning_rate"]
    if kind not in ("shared", "separate"):
        raise ConfigError(f"policy.learn.critic.optimizer must be shared or separate; got {kind!r}")
    if order not in ("together", "critic_first"):
        raise ConfigError(
            f"policy.learn.critic.order must be together or critic_first; got {order!r}"
        )
    if lr is not None and (isinstance(lr, bool) or not isinstance(lr, int | float) or lr <= 0):
        raise ConfigError(f"policy.learn.critic.learning_rate must be positive; got {lr!r}")
    if kind == "shared":
        if order != "together" or lr is not None:
            key = "order" if order != "together" else "learning_rate"
            raise ConfigError(
                f"policy.learn.critic.{key} needs policy.learn.critic.optimizer=separate"
            )
        return
    if not model["critic"]:
        raise ConfigError("policy.learn.critic.optimizer=separate needs policy.model.critic=true")
    if model["share_encoder"]:
        raise ConfigError(
            "policy.learn.critic.optimizer=separate needs separate actor and critic trunks "
            "(policy.model.share_encoder=false): a shared trunk would be stepped by both"
        )
