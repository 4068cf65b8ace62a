"""Frames of env copy 0, for videos: which envs can draw, and gymnasium's ``rgb_array``.

An env that can draw has ``render() -> np.ndarray``: uint8 ``[H, W, 3]``, a picture of copy
0 as it is now (after a step's autoreset, the first state of its next episode), and may set
``render_fps``, the frame rate that shows it in real time. The bundled ``cartpole``,
``pendulum`` and ``aircombat`` draw with numpy (:mod:`.canvas`); a ``gym:<id>`` env draws
when it was built with ``render_mode="rgb_array"`` and its gymnasium env supports that mode.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from ding_lite.utils.errors import DingLiteError

RGB_ARRAY = "rgb_array"
DEFAULT_FPS = 30.0
# Errors of an OpenGL backend (MuJoCo, PyOpenGL, GLFW, EGL) name one of these.
_GL_WORDS = re.compile(r"mujoco|opengl|glfw|egl|\bgl", re.IGNORECASE)
#: Why a headless machine draws MuJoCo only with these set (docs/quickstart.rst, Videos).
GL_HINT = (
    "without a display, set MUJOCO_GL=egl (GPU or Mesa's software EGL: libegl1, "
    "libegl-mesa0) or MUJOCO_GL=osmesa (libosmesa6)"
)


def can_render(env: Any) -> bool:
    """Whether ``env`` draws frames (has ``render()``; a gym env built for ``rgb_array``)."""
    if not callable(getattr(env, "render", None)):
        return False
    return getattr(env, "render_mode", RGB_ARRAY) == RGB_ARRAY


def cannot_render_message(env: Any, name: str) -> str:
    """One line saying why env ``name`` cannot draw."""
    if callable(getattr(env, "render", None)):  # a gym env built without rgb_array
        return f"env '{name}' was built without render_mode='{RGB_ARRAY}', so it cannot draw"
    return (
        f"env '{name}' cannot draw frames (it has no render()); videos need an env that "
        "does: cartpole, pendulum, aircombat, or a gym:<id> env with rgb_array rendering"
    )


def frame_rate(env: Any) -> float:
    """The env's ``render_fps`` (frames per second of real time), else ``DEFAULT_FPS``."""
    fps = getattr(env, "render_fps", None)
    return float(fps) if fps else DEFAULT_FPS


def headless_defaults() -> None:
    """Without a display, picks renderers that need none (unless the user chose): MuJoCo's
    EGL (``MUJOCO_GL=egl``; gymnasium would try GLFW first, which needs a display) and SDL's
    dummy video driver for pygame (CartPole, Box2D envs), which draw on an off-screen
    surface anyway. Only environment variables that are unset are set."""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def check_gym_render_mode(gym: Any, env_id: str, name: str, render_mode: str | None) -> None:
    """Raises ValueError when ``render_mode`` is set but the registered gymnasium env
    ``env_id`` does not list it in its class's ``metadata["render_modes"]`` (checked before
    the env is made, so it is not given an argument it may not take)."""
    if render_mode is None:
        return
    entry_point = gym.spec(env_id).entry_point
    if not callable(entry_point):
        from gymnasium.envs.registration import load_env_creator

        entry_point = load_env_creator(entry_point)
    metadata = getattr(entry_point, "metadata", None)
    if not isinstance(metadata, dict):  # a factory function: gymnasium checks when it is made
        return
    modes = list(metadata.get("render_modes") or [])
    if render_mode not in modes:
        raise ValueError(
            f"{name} cannot draw: render_mode={render_mode!r} is not one of its "
            f"render_modes {modes}"
        )


def gym_first_frame(gym_env: Any, name: str, render_mode: str | None) -> np.ndarray:
    """Copy 0's frame of a gymnasium vector env built with ``render_mode="rgb_array"``.

    ``SyncVectorEnv`` draws copy 0 alone; ``AsyncVectorEnv`` can only ask every copy (in
    parallel, in their subprocesses) and keeps copy 0's frame.

    Raises:
        DingLiteError: the env was built for another mode, or drawing failed (MuJoCo without
            an OpenGL context: the message says what to set).
    """
    if render_mode != RGB_ARRAY:
        raise DingLiteError(f"env '{name}' was built without render_mode='{RGB_ARRAY}'")
    try:
        envs = getattr(gym_env, "envs", None)
        frame = envs[0].render() if envs is not None else gym_env.call("render")[0]
    except DingLiteError:
        raise
    except Exception as err:  # a GL backend's error, of any type: one line instead
        text = " ".join(str(err).split())[:200]
        gl_error = _GL_WORDS.search(f"{type(err).__module__} {text}")
        hint = f"; {GL_HINT}" if gl_error else ""
        raise DingLiteError(
            f"env '{name}' could not draw a frame ({type(err).__name__}: {text}){hint}"
        ) from err
    return as_rgb_frame(frame, name)


def as_rgb_frame(frame: Any, name: str) -> np.ndarray:
    """``frame`` as uint8 ``[H, W, 3]`` (an alpha channel dropped); else DingLiteError."""
    array = np.asarray(frame) if frame is not None else None
    if array is None or array.ndim != 3 or array.shape[2] not in (3, 4):
        shape = None if array is None else list(array.shape)
        raise DingLiteError(f"env '{name}' drew no RGB frame (got shape {shape})")
    if array.dtype != np.uint8:
        raise DingLiteError(f"env '{name}' drew a frame of dtype {array.dtype}, not uint8")
    return np.array(array[:, :, :3], copy=True, order="C")  # never a view of env memory
