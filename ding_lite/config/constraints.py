"""What a config's values must be beyond their types, and sizes that must divide."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_lite.config.modules import is_module_name
from ding_lite.utils.errors import ConfigError


def _is_resource_name(value: str) -> bool:
    """ "" or a name Ray takes for a custom resource (letters, digits, '_', '-', '.')."""
    if value == "":
        return True
    ok = all(c.isalnum() or c in "_-." for c in value) and len(value) <= 64
    return ok and value not in ("CPU", "GPU", "memory", "object_store_memory")


# Value checks beyond the type: dotted key -> (predicate, what the value must be).
CONSTRAINTS: dict[str, tuple[Any, str]] = {
    "env.num_envs": (lambda v: v >= 1, "at least 1"),
    "env.vector_mode": (lambda v: v in ("sync", "async"), "'sync' or 'async'"),
    "env.reset_group_size": (lambda v: v >= 1, "at least 1"),
    "env.import_modules": (
        lambda v: all(is_module_name(m) for m in v),
        "a list of module names (my_envs, pkg.envs)",
    ),
    "policy.learn.n_epochs": (lambda v: v >= 1, "at least 1"),
    "policy.learn.batch_size": (lambda v: v >= 1, "at least 1"),
    "policy.learn.learning_rate": (lambda v: v > 0, "positive"),
    "policy.learn.grad_accum_steps": (lambda v: v >= 1, "at least 1"),
    "policy.learn.clip_ratio": (lambda v: v > 0, "positive"),
    "policy.learn.clip_ratio_c": (lambda v: v > 1, "above 1"),
    "policy.learn.is_max": (lambda v: v > 0, "above 0"),
    "policy.learn.vtrace_rho_max": (lambda v: v > 0, "above 0"),
    "policy.learn.vtrace_c_max": (lambda v: v > 0, "above 0"),
    "policy.learn.clip_ratio_low": (lambda v: v is None or 0 < v < 1, "in (0, 1) or none"),
    "policy.learn.clip_ratio_high": (lambda v: v is None or v > 0, "positive or none"),
    "policy.learn.grad_clip_norm": (lambda v: v is None or v > 0, "positive or none"),
    "policy.learn.value_clip_range": (lambda v: v is None or v > 0, "positive or none"),
    "policy.learn.optimizer": (lambda v: v in ("adam", "adamw"), "'adam' or 'adamw'"),
    "policy.model.activation": (lambda v: v in ("tanh", "relu"), "'tanh' or 'relu'"),
    "policy.collect.n_steps": (lambda v: v >= 1, "at least 1"),
    "policy.collect.gamma": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "policy.collect.gae_lambda": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "evaluator.n_episodes": (lambda v: v >= 1, "at least 1"),
    "collector.stats_window": (lambda v: v >= 1, "at least 1"),
    "collector.async_factor": (lambda v: v >= 1, "at least 1"),
    "evaluator.eval_freq": (lambda v: v >= 0, "0 or more"),
    "evaluator.video_freq": (lambda v: v >= 0, "0 or more"),
    "learner.keep_ckpts": (lambda v: v >= 1, "at least 1"),
    "max_env_step": (lambda v: v is None or v >= 1, "at least 1"),
    "max_train_iter": (lambda v: v is None or v >= 1, "at least 1"),
    "system.coordinator_port": (
        lambda v: v == "auto" or (isinstance(v, int) and 0 <= v < 65536),
        "'auto' or a port number",
    ),
    "system.torch_threads": (
        lambda v: v == "auto" or (isinstance(v, int) and v >= 1),
        "'auto' or a number of threads (at least 1)",
    ),
    "system.learners": (lambda v: v >= 1, "at least 1"),
    "system.collectors": (lambda v: v >= 1, "at least 1"),
    "system.heartbeat_period": (lambda v: v > 0, "positive"),
    "system.heartbeat_tolerance": (lambda v: v > 0, "positive"),
    "system.master_timeout": (lambda v: v > 0, "positive"),
    "system.task_timeout": (lambda v: v > 0, "positive"),
    "system.http_timeout": (lambda v: v > 0, "positive"),
    "system.max_body_bytes": (lambda v: v >= 1024, "at least 1024"),
    "system.max_policy_lag": (lambda v: v >= 0, "0 or more"),
    "system.keep_policies": (lambda v: v >= 1, "at least 1"),
    "system.max_pending_files": (lambda v: v >= 1, "at least 1"),
    "system.stall_timeout": (lambda v: v > 0, "positive"),
    "system.max_restarts": (lambda v: v >= 0, "0 or more"),
    "system.join_timeout": (lambda v: v > 0, "positive"),
    "system.dist_timeout": (lambda v: v > 0, "positive"),
    "system.launcher": (lambda v: v in ("local", "ray"), "'local' or 'ray'"),
    "system.data_plane": (lambda v: v in ("files", "http"), "'files' or 'http'"),
    "system.learner_node": (_is_resource_name, "'' or a Ray resource name (not CPU or GPU)"),
    "system.collector_node": (_is_resource_name, "'' or a Ray resource name (not CPU or GPU)"),
    "system.max_rollout_bytes": (lambda v: v >= 1024, "at least 1024"),
    "policy.learn.max_skipped_steps": (lambda v: v >= 1, "at least 1"),
    "policy.learn.value_weight": (lambda v: v > 0, "positive"),
    "policy.learn.entropy_weight": (lambda v: v >= 0, "0 or more"),
    "policy.learn.kl_coef": (lambda v: v >= 0, "0 or more"),
    "policy.learn.kl_coef_decay": (lambda v: v >= 0, "0 or more"),
    "policy.learn.kl_ref_update_interval": (lambda v: v >= 0, "0 or more"),
    "policy.learn.value_warmup_iters": (lambda v: v >= 0, "0 or more"),
    "policy.learn.target_kl": (lambda v: v is None or v > 0, "positive or none"),
    # Adam divides by sqrt(v) + eps: 0 gives 0/0 for a parameter with no gradient yet.
    "policy.learn.adam_eps": (lambda v: v > 0, "positive"),
    "policy.learn.weight_decay": (lambda v: v >= 0, "0 or more"),
    "policy.model.obs_clip": (lambda v: v > 0, "positive"),
    "policy.model.core": (lambda v: v in ("none", "lstm", "gru"), "'none', 'lstm' or 'gru'"),
    "policy.model.core_size": (lambda v: v >= 1, "at least 1"),
    "policy.model.sde_sample_freq": (lambda v: v >= 1, "at least 1"),
    "policy.learn.bptt_horizon": (lambda v: v >= 1, "at least 1"),
    "policy.learn.prio_alpha": (lambda v: v >= 0, "0 or more"),
    "policy.learn.prio_beta0": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "learner.max_iterations": (lambda v: v >= 1, "at least 1"),
    "device": (
        lambda v: v in ("cpu", "cuda", "auto") or v.startswith("cuda:"),
        "'cpu', 'cuda', 'cuda:N' or 'auto'",
    ),
}


def check_batch_arithmetic(cfg: Mapping) -> None:
    """Sizes that must divide one another, named by their keys when they do not.

    Raises:
        ConfigError: ``n_steps`` or ``batch_size`` not a whole number of segments, or
            ``env.num_envs`` not a whole number of the collector's buffers, or a buffer not
            a whole number of reset groups.
    """
    num_envs, buffers = cfg["env"]["num_envs"], cfg["collector"]["async_factor"]
    if num_envs % buffers:
        raise ConfigError(
            f"env.num_envs={num_envs} is not a multiple of collector.async_factor={buffers}: "
            "the collector steps its env copies in that many equal groups"
        )
    group_size = cfg["env"]["reset_group_size"]
    if (num_envs // buffers) % group_size:
        per = f"env.num_envs={num_envs}"
        if buffers > 1:  # each buffer is an env of its own; a reset group lies in one
            per = f"env.num_envs / collector.async_factor = {num_envs // buffers}"
        raise ConfigError(
            f"{per} is not a multiple of env.reset_group_size={group_size}: a reset group "
            "is that many whole env copies"
        )
    horizon = cfg["policy"]["learn"]["bptt_horizon"]
    n_steps = cfg["policy"]["collect"]["n_steps"]
    batch_size = cfg["policy"]["learn"]["batch_size"]
    if n_steps % horizon:
        raise ConfigError(
            f"policy.collect.n_steps={n_steps} is not a multiple of "
            f"policy.learn.bptt_horizon={horizon}: rollouts are cut into whole segments"
        )
    if batch_size % horizon:
        raise ConfigError(
            f"policy.learn.batch_size={batch_size} is not a multiple of "
            f"policy.learn.bptt_horizon={horizon}: a minibatch is a set of whole segments"
        )


def check_exploration(cfg: Mapping) -> None:
    """Options of the exploration noise that exclude each other.

    Raises:
        ConfigError: ``policy.model.sde`` with a state-dependent std head, or with a
            collector that steps its copies in groups (``collector.async_factor`` > 1: the
            groups' calls would share, and redraw, one set of exploration matrices).
    """
    model = cfg["policy"]["model"]
    if not model["sde"]:
        return
    if model["state_dependent_std"]:
        raise ConfigError(
            "policy.model.sde and policy.model.state_dependent_std exclude each other: gSDE "
            "has its own state-dependent std"
        )
    if cfg["collector"]["async_factor"] > 1:
        raise ConfigError(
            "policy.model.sde needs collector.async_factor=1: each env copy keeps its own "
            "exploration matrix between draws"
        )
