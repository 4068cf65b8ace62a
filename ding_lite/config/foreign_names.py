"""Config names other RL libraries use, and the ding_lite key each one means.

A user coming from Stable-Baselines3, CleanRL or DI-engine types the names they know;
difflib alone would send ``ent_coef`` to ``kl_coef`` and ``total_timesteps`` to
``system.stall_timeout``. An unknown config key whose last part is in :data:`FOREIGN_NAMES`
gets the real key instead, whatever section it was written in (or at the top). Only names
that mean one ding_lite key are listed. Names ding_lite uses too (``gamma``, ``seed``) are
listed for completeness; a misplaced one is answered with ding_lite's own key by name.
"""

from __future__ import annotations

from typing import NamedTuple


class ForeignName(NamedTuple):
    """What another library's config name means here."""

    #: The libraries that use the name ("SB3/CleanRL").
    origin: str
    #: The dotted ding_lite key with that meaning.
    key: str
    #: How the value translates, when it is not taken as is ("" when it is).
    note: str = ""


_SB3_CLEANRL = "SB3/CleanRL"
_ALL = "SB3/CleanRL/DI-engine"
_NORM = "gae normalizes advantages per minibatch, gae_no_norm does not"

#: Foreign config name -> the ding_lite key it means.
FOREIGN_NAMES: dict[str, ForeignName] = {
    "ent_coef": ForeignName(_SB3_CLEANRL, "policy.learn.entropy_weight"),
    "vf_coef": ForeignName(_SB3_CLEANRL, "policy.learn.value_weight"),
    "lr": ForeignName("Tianshou/PyTorch", "policy.learn.learning_rate"),
    "learning_rate": ForeignName(_ALL, "policy.learn.learning_rate"),
    "total_timesteps": ForeignName(_SB3_CLEANRL, "max_env_step", "env steps of all copies"),
    "clip_range": ForeignName("SB3", "policy.learn.clip_ratio"),
    "clip_coef": ForeignName("CleanRL", "policy.learn.clip_ratio"),
    "clip_ratio": ForeignName("DI-engine", "policy.learn.clip_ratio"),
    "clip_vloss": ForeignName("CleanRL", "policy.learn.value_clip"),
    "max_grad_norm": ForeignName(_SB3_CLEANRL, "policy.learn.grad_clip_norm"),
    "anneal_lr": ForeignName("CleanRL", "policy.learn.lr_anneal"),
    "n_steps": ForeignName("SB3", "policy.collect.n_steps"),
    "num_steps": ForeignName("CleanRL", "policy.collect.n_steps", "env steps per copy"),
    "batch_size": ForeignName("SB3/DI-engine", "policy.learn.batch_size"),
    "n_epochs": ForeignName("SB3", "policy.learn.n_epochs"),
    "update_epochs": ForeignName("CleanRL", "policy.learn.n_epochs"),
    "epoch_per_collect": ForeignName("DI-engine", "policy.learn.n_epochs"),
    "gae_lambda": ForeignName(_ALL, "policy.collect.gae_lambda"),
    "gamma": ForeignName(_SB3_CLEANRL, "policy.collect.gamma"),
    "discount_factor": ForeignName("DI-engine", "policy.collect.gamma"),
    "target_kl": ForeignName(_SB3_CLEANRL, "policy.learn.target_kl"),
    "norm_adv": ForeignName("CleanRL", "policy.learn.adv_estimator", _NORM),
    "normalize_advantage": ForeignName("SB3", "policy.learn.adv_estimator", _NORM),
    "adv_norm": ForeignName("DI-engine", "policy.learn.adv_estimator", _NORM),
    "value_weight": ForeignName("DI-engine", "policy.learn.value_weight"),
    "entropy_weight": ForeignName("DI-engine", "policy.learn.entropy_weight"),
    "num_envs": ForeignName("CleanRL", "env.num_envs"),
    "n_envs": ForeignName("SB3", "env.num_envs"),
    "collector_env_num": ForeignName("DI-engine", "env.num_envs"),
    "stop_value": ForeignName("DI-engine", "evaluator.stop_value"),
    "seed": ForeignName(_ALL, "seed"),
    "cuda": ForeignName("CleanRL/DI-engine", "device", "device=cuda or device=cpu"),
    "use_cuda": ForeignName("DI-engine", "device", "device=cuda or device=cpu"),
    "net_arch": ForeignName("SB3", "policy.model.hidden_sizes"),
    "activation_fn": ForeignName("SB3", "policy.model.activation", "'tanh' or 'relu'"),
    "stats_window_size": ForeignName("SB3", "collector.stats_window"),
}


def foreign_hint(dotted: str) -> str:
    """``"; SB3/CleanRL's ent_coef is policy.learn.entropy_weight here"`` for an unknown key
    whose last part another library uses, or "" (also when it names that very key)."""
    leaf = dotted.rsplit(".", 1)[-1]
    known = FOREIGN_NAMES.get(leaf)
    if known is None or known.key == dotted:
        return ""
    note = f" ({known.note})" if known.note else ""
    return f"; {known.origin}'s {leaf} is {known.key} here{note}"
