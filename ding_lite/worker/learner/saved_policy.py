"""A trained policy's model rebuilt from its checkpoint alone, and which checkpoint a run dir
means: what ``ding_lite.load_policy`` and a kickstarting teacher (``policy.learn.kickstart``)
both read.

A checkpoint records the observation shape, the action space and the model's options
(``arch`` in its policy state), so the model is rebuilt without an env or the run's config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ding_lite.envs.spaces import ActionSpace, space_from_dict
from ding_lite.envs.teachers import scripted_name
from ding_lite.model import ActorCritic, build_model
from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.worker.learner.checkpoint import BEST_CKPT, latest_valid_checkpoint, read_checkpoint


def find_checkpoint(path: str | Path) -> Path:
    """The checkpoint file a path means.

    A file is itself. A run dir (one holding ``ckpt/``) or a checkpoint folder gives its
    ``best.pt`` when that reads, else its newest readable ``ckpt_iter*.pt``.

    Raises:
        CheckpointError: nothing there, or no readable checkpoint in the folder.
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise CheckpointError(f"no such checkpoint file or run dir: {path}")
    folder = path / "ckpt" if (path / "ckpt").is_dir() else path
    best = folder / BEST_CKPT
    if best.is_file():
        try:
            read_checkpoint(best)
            return best
        except CheckpointError as err:
            get_logger("predict").warning(f"{err}; using the newest periodic checkpoint")
    newest = latest_valid_checkpoint(folder)
    if newest is None:
        raise CheckpointError(f"no readable checkpoint ({BEST_CKPT} or ckpt_iter*.pt) in {folder}")
    return newest


def saved_arch(state: dict[str, Any]) -> dict[str, Any] | None:
    """The architecture a checkpoint's content records (``obs_shape``, ``action_space``,
    ``options``), or None for an older checkpoint that records none."""
    policy_state = state.get("policy")
    arch = policy_state.get("arch") if isinstance(policy_state, dict) else None
    return arch if isinstance(arch, dict) else None


def rebuild_model(
    path: Path, state: dict[str, Any]
) -> tuple[ActorCritic, tuple[int, ...], ActionSpace]:
    """The model a checkpoint's content describes, with its weights (and its observation
    statistics) loaded.

    Args:
        path: The checkpoint file (for messages).
        state: Its content, as :func:`read_checkpoint` returns it.

    Returns:
        ``(model, obs_shape, action_space)``.

    Raises:
        CheckpointError: written before checkpoints recorded their spaces, or its model
            cannot be rebuilt (one line naming the file).
    """
    arch = saved_arch(state)
    if arch is None:
        raise CheckpointError(
            f"{path} does not record its observation and action spaces (an older "
            "checkpoint); use `ding-lite eval -c EXP` with it instead"
        )
    policy_state = state["policy"]
    try:
        obs_shape = tuple(int(s) for s in arch["obs_shape"])
        space = space_from_dict(arch["action_space"])
        options = dict(arch["options"])
        if options.get("core", "none") != "none" and not any(
            key.startswith("critic_core.") for key in policy_state["model"]
        ):  # saved when a recurrent actor and critic always shared one trunk
            options["share_encoder"] = True
        model = build_model(obs_shape, space, **options)
        model.load_state_dict(policy_state["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"{path}: cannot rebuild its policy: {first}") from None
    return model, obs_shape, space


def load_teacher(source: str, obs_shape: tuple[int, ...], action_space: ActionSpace) -> ActorCritic:
    """A kickstarting teacher (``policy.learn.kickstart.teacher``): the model of a run dir
    or checkpoint file, frozen.

    Raises:
        ConfigError: unreadable, recurrent, or trained on other observation or action
            spaces than the student's (one line naming the checkpoint).
    """
    try:
        path, state = read_checkpoint(find_checkpoint(source))
        model, t_obs, t_space = rebuild_model(path, state)
    except CheckpointError as err:
        raise ConfigError(f"policy.learn.kickstart.teacher: {err}") from None
    if tuple(t_obs) != tuple(obs_shape) or t_space != action_space:
        raise ConfigError(
            f"policy.learn.kickstart.teacher {path} acts on observations {list(t_obs)} with "
            f"actions {t_space}; this run has {list(obs_shape)} and {action_space}"
        )
    if getattr(model, "recurrent", False):
        raise ConfigError(
            f"policy.learn.kickstart.teacher {path} is recurrent; a teacher must be "
            "feed-forward (policy.model.core=none)"
        )
    return model.eval().requires_grad_(False)


def attach_teacher(policy: Any, cfg: Any, obs_shape: tuple[int, ...], space: ActionSpace) -> None:
    """Loads the run's kickstarting teacher into a learner's policy, if it names one (a
    scripted one, ``agent:NAME``, acts in the collectors: the policy is told to expect its
    actions)."""
    source = cfg.policy.learn.kickstart.teacher
    if source:
        scripted = scripted_name(source) is not None
        policy.set_teacher(None if scripted else load_teacher(source, obs_shape, space))
        kind = "scripted teacher" if scripted else "teacher"
        get_logger("learner").info(f"kickstarting from the {kind} {source}")
