"""Building the actor-critic from the ``policy.model`` options."""

from __future__ import annotations

from collections.abc import Sequence

from ..envs.spaces import ActionSpace
from .actor_critic import ActorCritic


def build_model(
    obs_shape: int | Sequence[int], action_space: ActionSpace, **model_cfg: object
) -> ActorCritic:
    """Builds the actor-critic for an env.

    Args:
        obs_shape: Observation size or shape (without the batch dimension).
        action_space: The env's action space.
        **model_cfg: Keyword options of :class:`ActorCritic` (``hidden_sizes``,
            ``activation``, ``share_encoder``, ``log_std_init``, ``state_dependent_std``,
            ``zero_init_value``, ``ortho_init``, ``obs_norm``, ``obs_clip``, ``core``,
            ``core_size``, ``critic``, ``sde``, ``sde_sample_freq``, ``encoder``,
            ``cnn_channels``, ``cnn_kernel``) and
            ``return_norm`` (set by the policy from ``policy.learn.reward_scale``).

    Returns:
        The :class:`ActorCritic`.

    Raises:
        ValueError: For an unknown option, activation, encoder or action space, or a
            ``cnn`` encoder on observations not shaped ``[C, H, W]``.
    """
    unknown = sorted(set(model_cfg) - set(MODEL_OPTIONS) - {"return_norm"})
    if unknown:
        raise ValueError(f"unknown model option(s) {unknown}; known: {', '.join(MODEL_OPTIONS)}")
    return ActorCritic(obs_shape, action_space, **model_cfg)  # type: ignore[arg-type]


MODEL_OPTIONS = (
    "hidden_sizes",
    "activation",
    "share_encoder",
    "log_std_init",
    "state_dependent_std",
    "zero_init_value",
    "ortho_init",
    "obs_norm",
    "obs_clip",
    "core",
    "core_size",
    "critic",
    "sde",
    "sde_sample_freq",
    "encoder",
    "cnn_channels",
    "cnn_kernel",
)
"""Keyword options :func:`build_model` accepts."""
