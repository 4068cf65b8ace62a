"""Videos: ``ding-lite render --out FILE.mp4|.gif`` of a checkpoint (CartPole, and MuJoCo
through the gymnasium adapter) and ``evaluator.video_freq`` in a serial run."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ding_lite import serial_pipeline
from ding_lite.entry.cli.command import main
from ding_lite.entry.trained.evaluate import evaluate_checkpoint
from ding_lite.entry.trained.video import render_video
from ding_lite.utils.errors import DingLiteError
from ding_lite.worker.collector.video_writer import default_video_suffix

iio = pytest.importorskip("imageio.v3", reason="the video extra: pip install -e '.[video]'")
pytest.importorskip("imageio_ffmpeg", reason="the video extra: pip install -e '.[video]'")

CARTPOLE = [  # a few small iterations, one eval episode each, every iteration evaluated
    "env.num_envs=4",
    "policy.collect.n_steps=32",
    "policy.learn.batch_size=64",
    "evaluator.n_episodes=1",
    "evaluator.eval_freq=1",
    "evaluator.min_train_return=none",
    "evaluator.video_freq=2",
]


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory) -> Path:
    """A 3-iteration cartpole_ppo run that records every second evaluation."""
    run = tmp_path_factory.mktemp("videos") / "cartpole"
    serial_pipeline("cartpole_ppo", max_train_iter=3, overrides=CARTPOLE, exp_dir=str(run))
    return run


@pytest.fixture(scope="module")
def mujoco_run(tmp_path_factory) -> Path:
    """A one-iteration InvertedPendulum-v5 run (mujoco_ppo) that records its evaluations:
    its eval env is built with render_mode="rgb_array" through the adapter."""
    pytest.importorskip("mujoco", reason="the mujoco extra: pip install -e '.[mujoco]'")
    run = tmp_path_factory.mktemp("videos") / "mujoco"
    overrides = [
        "env.name=gym:InvertedPendulum-v5",
        "env.num_envs=2",
        "policy.collect.n_steps=16",
        "policy.learn.batch_size=16",
        "policy.learn.n_epochs=1",
        "evaluator.n_episodes=1",
        "evaluator.video_freq=1",
    ]
    try:
        serial_pipeline("mujoco_ppo", max_train_iter=1, overrides=overrides, exp_dir=str(run))
    except DingLiteError as err:
        if "could not draw a frame" not in str(err):
            raise
        pytest.skip(f"MuJoCo cannot render headless on this machine: {err}")
    return run


def tb_summaries(run: Path) -> tuple[list[str], list]:
    """Every text summary and every image summary of the run's tensorboard event files."""
    from tensorboardX.proto import event_pb2

    texts, images = [], []
    for path in sorted((run / "tb").glob("events.out.tfevents.*")):
        data, pos = path.read_bytes(), 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from("<Q", data, pos)
            event = event_pb2.Event()
            event.ParseFromString(data[pos + 12 : pos + 12 + length])
            for value in event.summary.value:
                texts += [s.decode() for s in value.tensor.string_val]
                if value.HasField("image"):
                    images.append((value.tag, event.step, value.image))
            pos += 12 + length + 4
    return texts, images


def test_video_freq_records_every_second_evaluation_into_the_run_dir(cartpole_run):
    # Evaluations: iterations 1, 2, 3 and the final one at 3; the 2nd and 4th are recorded.
    suffix = default_video_suffix()
    videos = cartpole_run / "videos"
    assert sorted(p.name for p in videos.iterdir()) == [f"eval_v2{suffix}", f"eval_v3{suffix}"]
    frames = iio.imread(videos / f"eval_v3{suffix}")
    result = json.loads((cartpole_run / "result.json").read_text())
    # One frame per step of the final evaluation's episode; CartPole's return is its length.
    assert frames.shape == (result["eval_return_mean"], 400, 600, 3)
    texts, images = tb_summaries(cartpole_run)
    assert f"videos/eval_v3{suffix}: {frames.shape[0]} frames, 600x400, 50 fps" in texts
    # And an animated preview in the Images tab, one per recorded video: 600x400 / 3.
    assert [(tag, image.width, image.height) for tag, _, image in images] == [
        ("eval/video", 200, 134)
    ] * 2
    preview = iio.imread(images[-1][2].encoded_image_string, extension=".gif")
    assert preview.shape[1:3] == (134, 200) and 2 <= preview.shape[0] <= frames.shape[0]


def test_render_writes_a_cartpole_video_of_n_episodes(cartpole_run, tmp_path, capsys):
    out = tmp_path / "cartpole.mp4"
    assert (
        main(["render", str(cartpole_run), "--out", str(out), "--episodes", "2", "--seed", "3"])
        == 0
    )
    frames = iio.imread(out)
    ckpt = cartpole_run / "ckpt" / "best.pt"
    # Episode i starts from the reset with seed 3 + i, as `ding-lite eval --seed 3+i` plays it.
    lengths = [
        evaluate_checkpoint(str(cartpole_run / "config.json"), ckpt, episodes=1, seed=seed)[
            "length_mean"
        ]
        for seed in (3, 4)
    ]
    assert frames.shape == (sum(lengths), 400, 600, 3)
    assert frames[0].std() > 0 and not (frames[0] == frames[-1]).all()
    printed = capsys.readouterr().out
    assert printed.startswith(f"{out}: 2 episode(s), {sum(lengths):.0f} frames 600x400 at 50 fps")


def test_render_writes_a_gif(cartpole_run, tmp_path):
    video = render_video(
        cartpole_run / "config.json", cartpole_run / "ckpt", tmp_path / "a.gif", seed=1
    )
    back = iio.imread(tmp_path / "a.gif")
    assert video["frames"] == sum(video["lengths"]) and len(video["lengths"]) == 1
    # Pillow merges a frame identical to the one before (a cart that moved < 1 pixel).
    assert 0 < back.shape[0] <= video["frames"] and back.shape[1:3] == (400, 600)


def test_evaluator_videos_of_a_mujoco_task(mujoco_run):
    suffix = default_video_suffix()
    # The run's only evaluation (the final one, iteration 1) is recorded.
    assert [p.name for p in (mujoco_run / "videos").iterdir()] == [f"eval_v1{suffix}"]
    frames = iio.imread(mujoco_run / "videos" / f"eval_v1{suffix}")
    result = json.loads((mujoco_run / "result.json").read_text())
    # InvertedPendulum-v5 pays 1 a step but the terminating one: a return of L - 1 in L steps.
    assert frames.shape == (result["eval_return_mean"] + 1, 480, 480, 3)
    assert frames.std() > 0


def test_render_writes_a_mujoco_video(mujoco_run, tmp_path):
    out = tmp_path / "pendulum.mp4"
    video = render_video(mujoco_run / "config.json", mujoco_run / "ckpt", out, episodes=2)
    frames = iio.imread(out)
    assert frames.shape == (sum(video["lengths"]), 480, 480, 3) and video["fps"] == 25
    for seed, length in enumerate(video["lengths"]):
        report = evaluate_checkpoint(
            str(mujoco_run / "config.json"), mujoco_run / "ckpt", episodes=1, seed=seed
        )
        assert report["length_mean"] == length


def one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_unknown_suffix_is_a_one_line_error(cartpole_run, tmp_path, capsys):
    err = one_line_error(capsys, ["render", str(cartpole_run), "--out", str(tmp_path / "a.avi")])
    assert "unknown suffix (.avi); use .png (an air-combat picture), .mp4 or .gif" in err
    png = ["render", str(cartpole_run), "--out", str(tmp_path / "a.png"), "--episodes", "3"]
    assert "--episodes applies to videos (.mp4, .gif)" in one_line_error(capsys, png)
    assert list(tmp_path.iterdir()) == []


def test_an_env_that_cannot_draw_is_a_one_line_error(cartpole_run, tmp_path, capsys):
    config = tmp_path / "meet.yaml"
    config.write_text("exp_name: meet\nenv:\n  name: two_agent_meet\n  num_envs: 2\n")
    ckpt = str(cartpole_run / "ckpt" / "best.pt")  # the env is refused before it is read
    argv = ["render", "-c", str(config), "--ckpt", ckpt, "--out", str(tmp_path / "m.mp4")]
    err = one_line_error(capsys, argv)
    assert "env 'two_agent_meet' cannot draw frames (it has no render())" in err
    assert not (tmp_path / "m.mp4").exists()
