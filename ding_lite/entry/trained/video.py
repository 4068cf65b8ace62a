"""``ding-lite render --out FILE.mp4|.gif``: a video of a checkpoint's policy, for any env
that draws (see :mod:`ding_lite.envs.frames`).

The policy acts as in evaluation (the experiment's eval env and eval actions) in one env
copy; episode ``i`` starts from the reset with seed ``seed + i``, and the video shows the
episodes one after the other, one frame per step. imageio is an optional dependency (the
``video`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_config
from ding_lite.envs.frames import can_render, cannot_render_message, frame_rate
from ding_lite.envs.from_config import build_env
from ding_lite.policy import policy_from_checkpoint
from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.rng import set_seed
from ding_lite.utils.threads import torch_threads
from ding_lite.worker.collector.evaluator import Evaluator
from ding_lite.worker.collector.video_writer import VIDEO_SUFFIXES, VideoWriter, video_suffix
from ding_lite.worker.learner.base_learner import read_checkpoint

MAX_STEPS = 100_000  # safety limit per episode for envs without a time limit
PICTURE_SUFFIX = ".png"  # the air-combat picture of render.py


def render_kind(out: str | Path) -> str:
    """``"picture"`` for a ``.png``, ``"video"`` for an ``.mp4`` or ``.gif``.

    Raises:
        DingLiteError: any other suffix (one line listing the ones known).
    """
    suffix = Path(out).suffix.lower()
    if suffix == PICTURE_SUFFIX:
        return "picture"
    if suffix in VIDEO_SUFFIXES:
        return "video"
    shown = Path(out).suffix or "no suffix"
    raise DingLiteError(
        f"--out {out}: unknown suffix ({shown}); use .png (an air-combat picture), "
        ".mp4 or .gif (a video of any env that draws)"
    )


def render_video(
    cfg: str | Mapping,
    ckpt: str | Path,
    out: str | Path,
    *,
    episodes: int = 1,
    seed: int = 0,
    opponent: str | None = None,
    overrides: Iterable[str] | Mapping = (),
) -> dict[str, Any]:
    """Plays ``episodes`` episodes with a checkpoint's policy and writes them as a video.

    Args:
        cfg: the experiment the checkpoint was trained with (name, file or dict).
        ckpt: a checkpoint file, or a folder (its newest ``ckpt_iter*.pt``).
        out: the ``.mp4`` or ``.gif`` to write (parent folders are created).
        episodes: episodes, one after the other in the video.
        seed: episode ``i`` starts from the env's reset with seed ``seed + i``.
        opponent: aircombat only: P2's agent, over the eval env's (an agent registry name).
        overrides: dotted config overrides, as for the pipelines.

    Returns:
        ``{"path", "frames", "width", "height", "fps", "returns", "lengths", "checkpoint",
        "train_iter"}``: ``frames`` is the sum of ``lengths``, the episodes' steps (one
        frame per step); a return is NaN for an episode cut at ``MAX_STEPS``.

    Raises:
        ConfigError: a bad config, episode count or option; an env that cannot draw.
        CheckpointError: missing, corrupt or mismatching checkpoint.
        DingLiteError: imageio (or for .mp4 its ffmpeg plugin) is not installed, or the
            env failed to draw (MuJoCo without an OpenGL context: the message says what to
            set).
    """
    video_suffix(out)  # a wrong suffix fails before anything runs
    if episodes < 1:
        raise ConfigError(f"--episodes must be at least 1, got {episodes}")
    run_cfg = compile_config(cfg, overrides, seed=seed, device="cpu")
    if opponent is not None:
        if run_cfg.env.name != "aircombat":
            raise ConfigError(f"--opponent applies to the aircombat env, not '{run_cfg.env.name}'")
        run_cfg.evaluator.env_kwargs = {**run_cfg.evaluator.env_kwargs, "opponent": opponent}
    set_seed(seed)
    env = build_env(run_cfg, 1, "cpu", seed, evaluation=True, render=True)
    try:
        if not can_render(env):
            raise ConfigError(cannot_render_message(env, run_cfg.env.name))
        path, state = read_checkpoint(ckpt)
        policy = policy_from_checkpoint(
            run_cfg,
            path,
            state,
            obs_shape=env.obs_shape,
            action_space=env.action_space,
            device="cpu",
        )
        returns, lengths = [], []
        with (
            VideoWriter(out, frame_rate(env)) as video,
            torch_threads(run_cfg.system.torch_threads),
        ):
            for i in range(episodes):
                evaluator = Evaluator(env, policy.eval_mode, seed=seed + i, max_steps=MAX_STEPS)
                before = video.frames
                returns.append(evaluator.eval(record=video).return_mean)
                lengths.append(video.frames - before)
    finally:
        env.close()
    info = video.info
    assert info is not None  # set when the writer closed
    return {
        "path": str(info.path),
        "frames": info.frames,
        "width": info.width,
        "height": info.height,
        "fps": info.fps,
        "returns": returns,
        "lengths": lengths,
        "checkpoint": str(path),
        "train_iter": int(state["train_iter"]),
    }
