"""``utils.video.VideoWriter``: frames streamed to .mp4 / .gif, written atomically."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ding_lite.utils.errors import DingLiteError
from ding_lite.worker.collector.video_writer import VideoWriter, default_video_suffix, video_suffix

iio = pytest.importorskip("imageio.v3", reason="the video extra: pip install -e '.[video]'")


def frames(n: int, height: int = 48, width: int = 64) -> list[np.ndarray]:
    """``n`` distinct frames: a bar that moves right, on a grey background."""
    out = []
    for i in range(n):
        frame = np.full((height, width, 3), 90, dtype=np.uint8)
        frame[:, 2 * i : 2 * i + 6] = (250, 40, 40)
        out.append(frame)
    return out


def test_mp4_holds_every_frame_at_its_size_and_rate(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    path = tmp_path / "sub" / "a.mp4"
    with VideoWriter(path, fps=25) as video:
        for frame in frames(12):
            video.append(frame)
    info = video.info
    assert (info.path, info.frames, info.width, info.height, info.fps) == (path, 12, 64, 48, 25.0)
    back = iio.imread(path)
    assert back.shape == (12, 48, 64, 3)
    # Lossy, but the bar is where it was drawn: frame 5's red columns are 10..15.
    red = (back[5, :, :, 0] > 180) & (back[5, :, :, 1] < 120)
    assert set(np.nonzero(red.any(axis=0))[0]) >= set(range(11, 15))
    assert iio.immeta(path, plugin="FFMPEG")["fps"] == 25.0
    assert [p.name for p in path.parent.iterdir()] == ["a.mp4"]  # no temp file left
    assert path.stat().st_mode & 0o777 == 0o644  # a file to share, not a private one


def test_mp4_pads_odd_sizes_to_even(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    with VideoWriter(tmp_path / "odd.mp4", fps=10) as video:
        for frame in frames(3, height=47, width=63):
            video.append(frame)
    assert (video.info.width, video.info.height) == (64, 48)
    assert iio.imread(tmp_path / "odd.mp4").shape == (3, 48, 64, 3)


def test_gif_holds_every_distinct_frame(tmp_path):
    with VideoWriter(tmp_path / "a.gif", fps=20) as video:
        for frame in frames(7, height=31, width=45):
            video.append(frame)
    assert (video.info.frames, video.info.width, video.info.height) == (7, 45, 31)
    back = iio.imread(tmp_path / "a.gif")
    assert back.shape[:3] == (7, 31, 45)
    assert (tmp_path / "a.gif").stat().st_mode & 0o777 == 0o644


def test_a_failed_video_leaves_nothing(tmp_path):
    path = tmp_path / "v.mp4"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="boom"), VideoWriter(path, fps=10) as video:
        video.append(frames(1)[0])
        raise RuntimeError("boom")
    assert [p.name for p in tmp_path.iterdir()] == ["v.mp4"] and path.read_bytes() == b"old"
    with pytest.raises(DingLiteError, match="no frame to write"), VideoWriter(path, fps=10):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["v.mp4"] and path.read_bytes() == b"old"


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (np.zeros((48, 64, 3), dtype=np.float32), r"uint8 \[H, W, 3\], got float32"),
        (np.zeros((48, 64), dtype=np.uint8), r"uint8 \[H, W, 3\], got uint8 \[48, 64\]"),
        (np.zeros((40, 64, 3), dtype=np.uint8), "frame 1 is 64x40, the first was 64x48"),
    ],
)
def test_bad_frames_are_one_line_errors(tmp_path, frame, message):
    video = VideoWriter(tmp_path / "x.gif", fps=10)
    video.append(frames(1)[0])
    with pytest.raises(DingLiteError, match=message):
        video.append(frame)
    video.abort()
    assert list(tmp_path.iterdir()) == []


def test_suffix_and_fps_are_checked(tmp_path):
    assert video_suffix("a/B.MP4") == ".mp4" and video_suffix("c.gif") == ".gif"
    with pytest.raises(DingLiteError, match=r"must end in \.mp4 or \.gif, not '\.avi'"):
        VideoWriter(tmp_path / "x.avi", fps=10)
    with pytest.raises(DingLiteError, match="fps must be a positive number"):
        VideoWriter(tmp_path / "x.gif", fps=0)
    assert list(tmp_path.iterdir()) == []


def test_missing_ffmpeg_plugin_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # makes the import fail
    with pytest.raises(DingLiteError) as err:
        VideoWriter(tmp_path / "x.mp4", fps=10)
    assert str(err.value) == (
        "writing a video needs imageio's ffmpeg plugin: pip install 'imageio[ffmpeg]' (in a "
        "ding_lite checkout: pip install -e '.[video]'); or write a .gif"
    )
    assert default_video_suffix() == ".gif"  # the evaluator falls back to GIF


def test_an_ffmpeg_that_overruns_its_timeout_leaves_nothing(tmp_path, monkeypatch):
    pytest.importorskip("imageio_ffmpeg")
    # An "ffmpeg" that reads every frame and then never finishes (exec: the kill hits it).
    hung = tmp_path / "bin" / "ffmpeg"
    hung.parent.mkdir()
    hung.write_text("#!/bin/sh\ncat > /dev/null\nexec sleep 60\n")
    hung.chmod(0o755)
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(hung))
    monkeypatch.setattr("ding_lite.worker.collector.video_writer.FFMPEG_TIMEOUT_S", 0.5)
    out = tmp_path / "out"
    video = VideoWriter(out / "slow.mp4", fps=10)
    for frame in frames(20):
        video.append(frame)
    with pytest.raises(DingLiteError, match=r"slow\.mp4: ffmpeg did not finish within 0\.5 s"):
        video.close()
    assert list(out.iterdir()) == []
