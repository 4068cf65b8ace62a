"""MuJoCo's warnings go to ding_lite's log instead of ``MUJOCO_LOG.TXT`` in the current dir.

MuJoCo's default warning handler prints to stderr and appends to ``MUJOCO_LOG.TXT`` in the
working directory: a stray file in the user's folder (gymnasium's MuJoCo models trigger a
deprecation warning with mujoco 3.x and 4.x). Each distinct warning is logged once.
"""

from __future__ import annotations

import importlib.util
import threading

from ding_lite.utils.log import get_logger

_lock = threading.Lock()
_installed = False
_seen: set[str] = set()


def route_mujoco_warnings(env_id: str) -> None:
    """Installs the handler (once per process) before gymnasium env ``env_id`` is built, if
    it is one of gymnasium's MuJoCo envs and the mujoco package is installed."""
    global _installed
    with _lock:
        if _installed or importlib.util.find_spec("mujoco") is None:
            return
        try:
            import gymnasium

            entry_point = str(gymnasium.spec(env_id).entry_point)
        except Exception:  # unknown id or no gymnasium: the adapter reports it
            return
        if "mujoco" not in entry_point:
            return
        import mujoco

        mujoco.set_mju_user_warning(_log_warning)
        _installed = True


def _log_warning(message: str) -> None:
    text = message.strip()
    if text not in _seen:
        _seen.add(text)
        get_logger("envs.mujoco").info(f"MuJoCo: {text}")
