"""Building a policy by name, describing its model, and loading one from a checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ding_lite.envs.spaces import ActionSpace, space_to_dict
from ding_lite.policy.base import POLICY_REGISTRY, Policy
from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.rng import UPDATE_STREAM, RngStream, stream_seed


def model_arch(
    obs_shape: tuple[int, ...], action_space: ActionSpace, options: dict[str, Any]
) -> dict[str, Any]:
    """The plain-data description of a model saved in checkpoints: observation shape,
    action space and ``build_model`` options, so the model can be rebuilt without an env."""
    plain = {k: list(v) if isinstance(v, tuple | list) else v for k, v in options.items()}
    return {
        "obs_shape": [int(obs_shape)]
        if isinstance(obs_shape, int)
        else [int(s) for s in obs_shape],
        "action_space": space_to_dict(action_space),
        "options": plain,
    }


def create_policy(cfg: Any, **kwargs: Any) -> Policy:
    """Builds the policy named by ``cfg.type`` from the registry."""
    return POLICY_REGISTRY.get(cfg.type)(cfg, **kwargs)


def seed_updates(policy: Any, seed: int) -> None:
    """Gives the policy's update a random stream of its own, seeded from the run's ``seed``
    (the same in the serial run and in a parallel learner); a policy without
    ``update_rng`` keeps drawing from torch's global generator."""
    if hasattr(policy, "update_rng"):
        policy.update_rng = RngStream(stream_seed(seed, UPDATE_STREAM), policy.device)


def policy_from_checkpoint(
    cfg: Any,
    path: Path,
    state: dict[str, Any],
    *,
    obs_shape: tuple[int, ...],
    action_space: ActionSpace,
    device: Any,
) -> Policy:
    """Builds the policy ``cfg.policy`` describes and loads a checkpoint's model into it.

    Args:
        cfg: a resolved config (its ``policy`` section is read).
        path: the checkpoint file (for messages).
        state: its content, as ``read_checkpoint`` in ``ding_lite.worker.learner`` returns it.
        obs_shape: shape of one observation of the env the policy acts in.
        action_space: that env's action space.
        device: where the model lives.

    Raises:
        CheckpointError: the checkpoint's model does not fit ``cfg.policy`` and the env.
    """
    policy = create_policy(
        cfg.policy, obs_shape=obs_shape, action_space=action_space, device=device
    )
    try:
        policy.load_state_dict(state["policy"], model_only=True)
    except (RuntimeError, KeyError) as err:
        first = str(err).strip().splitlines()[0]
        raise CheckpointError(f"checkpoint {path} does not fit this experiment: {first}") from None
    return policy
