"""Frames of env copy 0 (``render()``): the numpy canvas, the bundled envs' pictures and
gymnasium's ``rgb_array`` through the adapter."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

from ding_lite.envs import create_env
from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.canvas import Canvas
from ding_lite.envs.frames import can_render, frame_rate, headless_defaults
from ding_lite.utils.errors import DingLiteError

POLE = (204, 153, 102)  # cartpole's pole colour
ROD = (204, 77, 77)  # pendulum's rod colour
BLUE, RED, DEAD = (31, 119, 180), (214, 39, 40), (90, 90, 90)  # aircombat P1, P2, destroyed


def pixels_of(frame: np.ndarray, color: tuple[int, int, int]) -> np.ndarray:
    """``[K, 2]`` (row, column) of the pixels of exactly ``color``."""
    return np.argwhere((frame == np.array(color, dtype=np.uint8)).all(axis=2))


# ------------------------------------------------------------------------------- canvas
def test_canvas_fills_pixels_whose_centres_lie_inside():
    canvas = Canvas(10, 8)
    canvas.rect(1.0, 2.0, 4.0, 3.0, (1, 2, 3))  # centres x 1.5..3.5, y 2.5
    assert pixels_of(canvas.pixels, (1, 2, 3)).tolist() == [[2, 1], [2, 2], [2, 3]]
    canvas.disc(5.0, 5.0, 1.0, (9, 9, 9))  # centres within 1 of (5, 5): the 2x2 block
    assert sorted(pixels_of(canvas.pixels, (9, 9, 9)).tolist()) == [[4, 4], [4, 5], [5, 4], [5, 5]]
    canvas.segment(0.0, 7.5, 10.0, 7.5, 1.0, (7, 7, 7))  # the bottom row, end to end
    assert pixels_of(canvas.pixels, (7, 7, 7)).tolist() == [[7, j] for j in range(10)]
    assert (canvas.pixels[0] == 255).all()  # the background is untouched


def test_canvas_clips_shapes_outside_and_ignores_non_finite_ones():
    canvas = Canvas(6, 6)
    canvas.disc(-50.0, 3.0, 4.0, (0, 0, 0))
    canvas.segment(3.0, 3.0, math.nan, 3.0, 2.0, (0, 0, 0))
    canvas.rect(-10, -10, 100, 0.2, (0, 0, 0))  # no pixel centre inside
    canvas.rect(1.0, math.inf, 2.0, 3.0, (0, 0, 0))
    assert (canvas.pixels == 255).all()
    canvas.disc(0.0, 0.0, 1.0, (5, 5, 5))  # a quarter of it is on the canvas
    assert pixels_of(canvas.pixels, (5, 5, 5)).tolist() == [[0, 0]]


# ---------------------------------------------------------------------- bundled envs
@pytest.mark.parametrize(
    ("name", "shape", "fps"),
    [
        ("cartpole", (400, 600, 3), 50),
        ("pendulum", (500, 500, 3), 20),
        ("aircombat", (512, 512, 3), 30),
    ],
)
def test_bundled_frames_have_their_shape_dtype_and_rate(name, shape, fps):
    env = create_env(name, 3, seed=0)
    env.reset()
    frame = env.render()
    assert can_render(env) and frame.shape == shape and frame.dtype == np.uint8
    assert frame_rate(env) == fps
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 2  # a picture, not a blank


def test_cartpole_frame_follows_copy_0_only():
    env = create_env("cartpole", 2, seed=0)
    env.reset()
    env.state[:] = torch.tensor([0.0, 0.0, 0.3, 0.0])
    right = env.render()
    pole = pixels_of(right, POLE)
    assert len(pole) > 200 and pole[:, 1].mean() > 300 + 10  # leaning right of the centre
    env.state[1] = torch.tensor([1.5, 0.0, -0.2, 0.0])  # another copy: same picture
    assert np.array_equal(env.render(), right)
    env.state[0] = torch.tensor([-1.0, 0.0, -0.3, 0.0])  # copy 0 moved left, leaning left
    left = env.render()
    assert not np.array_equal(left, right)
    assert pixels_of(left, POLE)[:, 1].mean() < 300 - 100


def test_cartpole_frame_changes_as_the_env_steps():
    env = create_env("cartpole", 1, seed=0)
    env.reset()
    frames = [env.render()]
    for _ in range(5):
        env.step(torch.ones(1, dtype=torch.long))
        frames.append(env.render())
    assert all(not np.array_equal(a, b) for a, b in zip(frames, frames[1:], strict=False))


def test_pendulum_frame_shows_the_angle():
    env = create_env("pendulum", 1, seed=0)
    env.reset()
    env.state[0] = torch.tensor([0.0, 0.0])  # upright: the rod above the pivot
    up = pixels_of(env.render(), ROD)
    env.state[0] = torch.tensor([math.pi, 0.0])  # hanging down
    down = pixels_of(env.render(), ROD)
    assert up[:, 0].mean() < 250 - 50 and down[:, 0].mean() > 250 + 50
    env.state[0] = torch.tensor([math.pi / 2, 0.0])  # a quarter turn counter-clockwise
    assert pixels_of(env.render(), ROD)[:, 1].mean() < 250 - 50


def test_aircombat_frame_places_aircraft_and_marks_the_destroyed():
    env = create_env("aircombat", 2, seed=0, opponent="placeholder")
    env.reset()
    env.x[0] = torch.tensor([-P.ARENA_HALF / 2, P.ARENA_HALF / 2])  # P1 west, P2 east
    env.y[0] = torch.tensor([0.0, P.ARENA_HALF / 2])  # P2 north-east
    frame = env.render()
    blue, red = pixels_of(frame, BLUE).mean(0), pixels_of(frame, RED).mean(0)
    assert blue[1] < 256 - 100 and abs(blue[0] - 256) < 12  # (row, column)
    assert red[1] > 256 + 100 and red[0] < 256 - 100
    env.alive[0, 1] = 0.0
    frame = env.render()
    assert len(pixels_of(frame, RED)) == 0 and len(pixels_of(frame, DEAD)) > 50


# ------------------------------------------------------------------- gymnasium adapter
def test_gym_cartpole_draws_with_rgb_array(monkeypatch):
    pytest.importorskip("pygame")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("SDL_VIDEODRIVER", raising=False)  # (re)set by the adapter: restored
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    env = create_env("gym:CartPole-v1", 2, seed=0, render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    for _ in range(10):  # one step moves the cart by less than a pixel
        env.step(torch.ones(2, dtype=torch.long))
    assert can_render(env) and frame_rate(env) == 50
    assert first.shape == (400, 600, 3) and first.dtype == np.uint8
    assert not np.array_equal(first, env.render())
    env.close()


def test_gym_env_without_render_mode_cannot_draw():
    env = create_env("gym:CartPole-v1", 1, seed=0)
    env.reset(seed=0)
    assert not can_render(env)
    with pytest.raises(DingLiteError, match="built without render_mode='rgb_array'"):
        env.render()
    env.close()


def test_gym_env_without_rgb_array_is_refused_before_it_is_made():
    pytest.importorskip("gymnasium")
    import gym_corridor  # noqa: F401  (registers Corridor-v0, which has no render modes)

    with pytest.raises(ValueError, match=r"cannot draw: render_mode='rgb_array' is not one"):
        create_env("gym:Corridor-v0", 1, render_mode="rgb_array")


def test_headless_defaults_set_only_what_is_unset(monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    headless_defaults()
    assert os.environ["MUJOCO_GL"] == "osmesa" and os.environ["SDL_VIDEODRIVER"] == "dummy"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.delenv("SDL_VIDEODRIVER")
    headless_defaults()
    assert os.environ["MUJOCO_GL"] == "egl"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")  # a display: nothing is chosen for the user
    headless_defaults()
    assert "MUJOCO_GL" not in os.environ
