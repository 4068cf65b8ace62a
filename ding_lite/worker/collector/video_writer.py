"""Writing videos: RGB frames streamed into an ``.mp4`` (H.264 through ffmpeg) or ``.gif``.

The ``video`` extra (``imageio[ffmpeg]``) brings what is needed, imported when a video is
opened: imageio's ffmpeg plugin, ``imageio-ffmpeg`` (it ships an ffmpeg binary), streams an
``.mp4`` to ffmpeg frame by frame; Pillow, an imageio dependency, writes a ``.gif`` from
palette frames kept in memory (one byte a pixel) until it is closed. Pillow merges a GIF
frame identical to the one before into it (adding its time), so a GIF of a still scene
holds fewer frames than were added. Either is written to a
temporary file beside its target and moved into place when complete, so a reader never sees
a torn video; a video that fails or gets no frame leaves nothing.

H.264 in ``yuv420p`` (the form every player reads) needs even sizes: a frame with an odd
width or height gets one more column or row, a copy of its last one.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.utils.errors import DingLiteError, DiskFullError, is_disk_full

VIDEO_SUFFIXES = (".mp4", ".gif")
INSTALL = "pip install 'imageio[ffmpeg]' (in a ding_lite checkout: pip install -e '.[video]')"
FFMPEG_TIMEOUT_S = 120.0  # the longest wait for ffmpeg to finish a file


@dataclass(frozen=True)
class VideoInfo:
    """A video written: its ``path``, ``frames``, size in pixels and frame rate."""

    path: Path
    frames: int
    width: int
    height: int
    fps: float


def video_suffix(path: str | os.PathLike) -> str:
    """The suffix of a video file (``.mp4`` or ``.gif``, any case) or a one-line error."""
    suffix = Path(path).suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise DingLiteError(
            f"{path}: a video must end in {' or '.join(VIDEO_SUFFIXES)}, not "
            f"'{Path(path).suffix or '(no suffix)'}'"
        )
    return suffix


def default_video_suffix() -> str:
    """``.mp4`` when imageio's ffmpeg plugin is installed, else ``.gif`` (Pillow).

    Raises:
        DingLiteError: neither is installed.
    """
    if _installed("imageio_ffmpeg"):
        return ".mp4"
    _require("PIL", "Pillow")
    return ".gif"


class VideoWriter:
    """Streams frames into a video; the file appears at ``path`` when :meth:`close` ends.

    Use it as a context manager: leaving the block closes it (the video is written), or, on
    an exception, discards it. :attr:`info` then describes the video.

    Args:
        path: the video to write, ``.mp4`` or ``.gif`` (folders are created).
        fps: frames per second (a GIF stores each frame's time in 10 ms steps).

    Raises:
        DingLiteError: another suffix, a missing imageio-ffmpeg (``.mp4``) or Pillow
            (``.gif``), or an fps that is not positive.
    """

    def __init__(self, path: str | os.PathLike, fps: float) -> None:
        self.path = Path(path)
        self.suffix = video_suffix(self.path)
        try:
            self.fps = float(fps)
        except (TypeError, ValueError):
            self.fps = math.nan
        if not (math.isfinite(self.fps) and self.fps > 0):
            raise DingLiteError(f"a video's fps must be a positive number, got {fps!r}")
        if self.suffix == ".mp4":
            _require("imageio_ffmpeg", "imageio's ffmpeg plugin", alternative="; or write a .gif")
        else:
            _require("PIL", "Pillow")
        self._size: tuple[int, int] | None = None  # (height, width) of the first frame
        self._count = 0
        self._gif_frames: list[Any] = []
        self.info: VideoInfo | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Named as every atomic write's temp file (``.<name>.<random>.tmp``), so the clean-up
        # of a killed run's temp files finds it; the container is named to the encoder.
        fd, tmp = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
        )
        os.fchmod(fd, 0o644)  # a video to share, not mkstemp's private 0600
        os.close(fd)
        self._tmp = Path(tmp)
        self._writer: Any = None  # imageio-ffmpeg's frame generator, from the first frame

    @property
    def frames(self) -> int:
        """Frames added so far."""
        return self._count

    def append(self, frame: np.ndarray) -> None:
        """Adds one frame: uint8 ``[H, W, 3]``, every frame of one size.

        Raises:
            DingLiteError: another shape or dtype than the first frame's.
        """
        frame = np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise DingLiteError(
                f"{self.path.name}: a frame must be uint8 [H, W, 3], got {frame.dtype} "
                f"{list(frame.shape)}"
            )
        if self._size is None:
            self._size = frame.shape[:2]
        elif frame.shape[:2] != self._size:
            raise DingLiteError(
                f"{self.path.name}: frame {self._count} is {frame.shape[1]}x{frame.shape[0]}, "
                f"the first was {self._size[1]}x{self._size[0]}; every frame needs one size"
            )
        if self.suffix == ".mp4":
            pad = ((0, frame.shape[0] % 2), (0, frame.shape[1] % 2), (0, 0))
            if pad[0][1] or pad[1][1]:
                frame = np.pad(frame, pad, mode="edge")
            if self._writer is None:
                self._writer = self._start_ffmpeg(frame.shape[1], frame.shape[0])
            self._guarded(self._writer.send, np.ascontiguousarray(frame))
        else:
            from PIL import Image

            image = Image.fromarray(frame).quantize(256, method=Image.Quantize.FASTOCTREE)
            self._gif_frames.append(image)
        self._count += 1

    def close(self) -> VideoInfo:
        """Finishes the file and moves it into place.

        Raises:
            DingLiteError: no frame was added (nothing is written).
            DiskFullError: the disk is full (nothing is written).
        """
        if self.info is not None:
            return self.info
        if self._count == 0:
            self.abort()
            raise DingLiteError(f"{self.path}: no frame to write")
        try:
            if self._writer is not None:
                writer, self._writer = self._writer, None
                self._finish_ffmpeg(writer)
            else:
                first, *rest = self._gif_frames
                duration = max(10, round(100.0 / self.fps) * 10)  # ms, GIF's 10 ms steps
                self._guarded(
                    first.save,
                    self._tmp,
                    save_all=True,
                    append_images=rest,
                    duration=duration,
                    loop=0,
                    format="GIF",
                )
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        assert self._size is not None  # set by the first frame
        height, width = self._size
        if self.suffix == ".mp4":
            height, width = height + height % 2, width + width % 2
        self.info = VideoInfo(self.path, self._count, width, height, self.fps)
        self._gif_frames = []
        return self.info

    def abort(self) -> None:
        """Stops writing and removes the temporary file (the target is left as it was)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # noqa: S110 - the file it wrote is removed next
                pass
        self._gif_frames = []
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _start_ffmpeg(self, width: int, height: int) -> Any:
        """imageio-ffmpeg's frame writer (an ffmpeg process) for ``width x height`` frames."""
        import imageio_ffmpeg

        writer = imageio_ffmpeg.write_frames(
            str(self._tmp),
            (width, height),
            fps=self.fps,
            codec="libx264",
            pix_fmt_out="yuv420p",
            macro_block_size=1,  # sizes are even already: no rescaling
            ffmpeg_log_level="error",
            ffmpeg_timeout=FFMPEG_TIMEOUT_S,
            output_params=["-f", "mp4"],
        )
        writer.send(None)  # starts ffmpeg
        return writer

    def _finish_ffmpeg(self, writer: Any) -> None:
        """Waits (at most ``FFMPEG_TIMEOUT_S``) for ffmpeg to finish the file.

        imageio-ffmpeg kills an ffmpeg that overruns the timeout and only logs it; that
        warning is caught here, as the error it is (the file would be torn).
        """
        warnings = _Messages()
        logger = logging.getLogger("imageio_ffmpeg")
        logger.addHandler(warnings)
        try:
            self._guarded(writer.close)
        finally:
            logger.removeHandler(warnings)
        if any("kill" in message for message in warnings.messages):
            raise DingLiteError(
                f"{self.path}: ffmpeg did not finish within {FFMPEG_TIMEOUT_S:g} s (killed)"
            )

    def _guarded(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """``call(...)``, a full disk raised as DiskFullError (naming the video)."""
        try:
            return call(*args, **kwargs)
        except OSError as err:
            if is_disk_full(err):
                raise DiskFullError.writing(self.path) from None
            raise


class _Messages(logging.Handler):
    """Keeps the messages of the records it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _installed(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _require(module: str, what: str, alternative: str = "") -> None:
    """A one-line error saying how to install ``module`` when it cannot be imported."""
    if not _installed(module):
        raise DingLiteError(f"writing a video needs {what}: {INSTALL}{alternative}")


PREVIEW_SIDE = 240  # pixels: at most this on the longer side of a tensorboard preview
PREVIEW_FRAMES = 150  # at most; a longer video is sampled evenly


def gif_preview(path: str | os.PathLike, fps: float) -> tuple[bytes, int, int]:
    """A small animated GIF of a written video, for tensorboard: ``(bytes, width, height)``.

    Frames are shrunk by a whole factor (box filter) so the longer side is at most
    :data:`PREVIEW_SIDE` pixels, a video longer than :data:`PREVIEW_FRAMES` frames is
    sampled evenly (the GIF plays in the video's time), and every frame shares one
    128-colour palette taken from the first, middle and last frames. About 1 s for a
    500-frame 600x400 video, most of it ffmpeg decoding.
    """
    import io

    import imageio.v3 as iio
    from PIL import Image

    frames = list(iio.imiter(Path(path)))
    if not frames:
        raise DingLiteError(f"{path}: no frame to preview")
    step = max(1, math.ceil(len(frames) / PREVIEW_FRAMES))
    height, width = frames[0].shape[:2]
    factor = max(1, math.ceil(max(height, width) / PREVIEW_SIDE))
    images = [Image.fromarray(f).reduce(factor) for f in frames[::step]]
    sample = np.concatenate([np.asarray(images[i]) for i in (0, len(images) // 2, -1)])
    palette = Image.fromarray(sample).quantize(colors=128)
    paletted = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    buffer = io.BytesIO()
    duration = max(20, round(1000.0 * step / fps / 10) * 10)  # ms, GIF's 10 ms steps
    paletted[0].save(
        buffer, format="GIF", save_all=True, append_images=paletted[1:], duration=duration, loop=0
    )
    return buffer.getvalue(), images[0].width, images[0].height
