"""Videos of evaluation episodes (``evaluator.video_freq``): which evaluations the evaluator
records, where the files go, and what tensorboard gets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.log import get_logger
from ding_lite.worker.collector.video_writer import VideoInfo, default_video_suffix, gif_preview

VIDEO_DIR = "videos"  # below the run dir
TB_TAG = "eval/video"


@dataclass
class EvalVideo:
    """Records env copy 0's episode of every ``freq``-th evaluation (the ``freq``-th, the
    ``2 * freq``-th, ...) to ``folder/eval_v<version><suffix>``.

    Attributes:
        freq: record every this many evaluations (1: each one).
        folder: where the videos go (``<exp_dir>/videos``).
        suffix: ``.mp4``, or ``.gif`` when imageio's ffmpeg plugin is missing.
        evaluations: evaluations counted so far (by :meth:`next_path`).
    """

    freq: int
    folder: Path
    suffix: str = field(default_factory=default_video_suffix)
    evaluations: int = 0

    @classmethod
    def from_config(cls, cfg: Any, run_dir: str | Path) -> EvalVideo | None:
        """The recorder ``cfg.evaluator.video_freq`` asks for (None when it is 0).

        Raises:
            ConfigError: video_freq is set but imageio is not installed.
        """
        freq = int(cfg.evaluator["video_freq"])
        if freq <= 0:
            return None
        try:
            suffix = default_video_suffix()
        except DingLiteError as err:
            raise ConfigError(f"evaluator.video_freq={freq}: {err}") from None
        return cls(freq, Path(run_dir) / VIDEO_DIR, suffix)

    def next_path(self, version: int | None = None) -> Path | None:
        """Counts one evaluation; returns the file to record it into, None when not due.

        Args:
            version: the evaluated policy version (or iteration) that names the file; None:
                the evaluation's number.
        """
        self.evaluations += 1
        if self.evaluations % self.freq:
            return None
        label = self.evaluations if version is None else version
        return self.folder / f"eval_v{label}{self.suffix}"


def log_eval_video(tb_logger: Any, video: VideoInfo | None, envstep: int, run_dir: Path) -> None:
    """Puts a recorded evaluation video in tensorboard: a small animated GIF of it in the
    Images tab (``eval/video``, see
    :func:`~ding_lite.worker.collector.video_writer.gif_preview`) and, in the Text tab, the
    file (relative to the run dir) with its frame count and size."""
    if video is None or tb_logger is None:
        return
    try:
        shown = video.path.relative_to(run_dir)
    except ValueError:
        shown = video.path
    tb_logger.add_text(
        TB_TAG,
        f"{shown}: {video.frames} frames, {video.width}x{video.height}, {video.fps:g} fps",
        envstep,
    )
    try:
        gif, width, height = gif_preview(video.path, video.fps)
    except Exception as err:  # the file is written; a preview is a nicety
        get_logger().warning(f"no tensorboard preview of {shown}: {err}")
        return
    tb_logger.add_animation(TB_TAG, gif, width, height, envstep)
