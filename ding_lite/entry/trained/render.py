"""``ding-lite render --out FILE.png``: one air-combat episode of a checkpoint's policy, drawn
as a PNG (``.mp4`` and ``.gif``, videos of any env, are :mod:`.video`'s).

P1 flies the checkpoint's policy with the experiment's eval actions (the mode unless
``policy.eval.deterministic`` is false, as in ``aircombat_ppo``), P2 the experiment's opponent. The
picture shows both aircraft tracks, every missile's flight, where each aircraft started and
where one was destroyed. matplotlib is an optional dependency (the ``render`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ding_lite.config.config import compile_config
from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.env import AirCombatEnv
from ding_lite.policy import policy_from_checkpoint
from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.worker.learner.base_learner import read_checkpoint

MAX_STEPS = 100_000  # safety limit for configs without a time limit
COLORS = ("tab:blue", "tab:red")  # P1, P2
OUTCOME_TEXT = {1: "P1 wins", -1: "P2 wins", 0: "draw"}  # by outcome, P1's view


@dataclass
class Frame:
    """Positions (m) of one env copy after a step's physics, before any autoreset.

    Attributes:
        x, y: ``[2]`` aircraft positions (P1, P2).
        alive: bool ``[2]``.
        m_x, m_y: ``[2, MISSILES]`` missile positions (shooter, slot).
        m_active: bool ``[2, MISSILES]``: the missile is in flight.
    """

    x: Tensor
    y: Tensor
    alive: Tensor
    m_x: Tensor
    m_y: Tensor
    m_active: Tensor

    @classmethod
    def of(cls, env: AirCombatEnv) -> Frame:
        """Copies copy 0's positions out of ``env``."""
        x, y, m_x, m_y = (getattr(env, k)[0].clone() for k in ("x", "y", "m_x", "m_y"))
        return cls(x, y, env.alive[0] > 0, m_x, m_y, env.m_active[0] > 0)  # float flags


class TrackedAirCombatEnv(AirCombatEnv):
    """An :class:`AirCombatEnv` that keeps copy 0's state of the last step before autoreset.

    The base env resets a finished copy inside the same ``step()``, overwriting its final
    positions; this subclass reads them just before (it changes no state).

    Attributes:
        last_frame: The positions after the latest step's physics.
    """

    last_frame: Frame | None = None

    def _autoreset(self, done: Tensor) -> tuple[Tensor, Tensor]:
        self.last_frame = Frame.of(self)
        return super()._autoreset(done)


def render_match(
    cfg: str | Mapping,
    ckpt: str | Path,
    out: str | Path,
    seed: int = 0,
    opponent: str | None = None,
    *,
    overrides: Iterable[str] | Mapping = (),
) -> dict[str, Any]:
    """Plays one episode with a checkpoint's policy as P1 and draws it to a PNG.

    Args:
        cfg: the aircombat experiment the checkpoint was trained with (name, file or dict).
        ckpt: a checkpoint file, or a folder (its newest ``ckpt_iter*.pt``).
        out: the PNG to write (parent folders are created).
        seed: seed of the episode's initial state (and of a random opponent).
        opponent: replaces ``env.kwargs.opponent`` (an agent registry name);
            ``env.kwargs.opponent_kwargs`` in ``overrides`` still apply, e.g. a ``ckpt``.
        overrides: dotted config overrides, as for the pipelines.

    Returns:
        ``{"outcome", "length", "missiles_fired", "path", "checkpoint", "train_iter"}``:
        outcome +1 (P1 won), -1 (P2 won) or 0 (draw), ``missiles_fired`` ``[P1, P2]``.

    Raises:
        ConfigError: unknown experiment, bad config, or an env other than aircombat.
        CheckpointError: missing, corrupt or mismatching checkpoint.
        DingLiteError: matplotlib is not installed.
    """
    run_cfg = compile_config(cfg, overrides, seed=seed, device="cpu")
    if run_cfg.env.name != AirCombatEnv.name:
        raise ConfigError(
            f"a .png draws aircraft tracks and supports only the aircombat env; "
            f"{run_cfg.exp_name} trains env '{run_cfg.env.name}' "
            "(--out FILE.mp4 or FILE.gif: a video)"
        )
    path, state = read_checkpoint(ckpt)
    figure_cls = _figure_class()  # fail before playing when matplotlib is missing
    env_kwargs = dict(run_cfg.env.kwargs)
    if opponent is not None:
        env_kwargs["opponent"] = opponent
    try:
        env = TrackedAirCombatEnv(num_envs=1, seed=seed, **env_kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"env.kwargs: {err}") from None
    policy = policy_from_checkpoint(
        run_cfg, path, state, obs_shape=env.obs_shape, action_space=env.action_space, device="cpu"
    )
    # Sampled actions (policy.eval.deterministic=false) come from the seeded global stream,
    # so a seed always draws the same match.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        frames, info = _play(env, policy.model, bool(run_cfg.policy.eval.deterministic))
    episode = info["episode"]
    match = {
        # P1's view (in self-play, agent 0's: blue)
        "outcome": float(episode["outcome"][0].reshape(-1)[0]) if bool(episode["mask"][0]) else 0.0,
        "length": len(frames) - 1,
        "missiles_fired": info["combat"]["missiles_fired"][0].tolist(),
        "path": str(out),
        "checkpoint": str(path),
        "train_iter": int(state["train_iter"]),
    }
    opponent_name = env_kwargs.get("opponent", "rule_based")
    title = (
        f"{OUTCOME_TEXT[round(match['outcome'])].capitalize()} after {match['length']} steps "
        f"({match['length'] * P.DT:.0f} s)\n"
        f"P1 {path.name} vs P2 {opponent_name}, seed {seed}, missiles fired "
        f"{match['missiles_fired'][0]}-{match['missiles_fired'][1]}"
    )
    _draw(figure_cls, frames, title, Path(out))
    return match


def _play(
    env: TrackedAirCombatEnv, model: Any, deterministic: bool
) -> tuple[list[Frame], dict[str, Any]]:
    """Runs copy 0's first episode; returns its frames (the initial one first) and the
    last step's info."""
    obs, _ = env.reset()
    frames = [Frame.of(env)]
    info: dict[str, Any] = {}
    # A recurrent policy carries its state from the episode's start (model.step is act for
    # a feed-forward one); in self-play (two agents per copy) it flies both fighters.
    agents = env.num_agents
    rows = env.num_envs * agents
    state = model.initial_state(rows, obs.device)
    starts = torch.ones(rows, dtype=torch.bool, device=obs.device)
    with torch.inference_mode():
        for _ in range(MAX_STEPS):
            action, _, _, state = model.step(
                obs.flatten(0, 1) if agents > 1 else obs, state, starts, deterministic=deterministic
            )
            starts = torch.zeros_like(starts)
            obs, _, _, _, info = env.step(
                action.unflatten(0, (-1, agents)) if agents > 1 else action
            )
            assert env.last_frame is not None  # drawn by every step of a render env
            frames.append(env.last_frame)
            if bool(info["episode"]["mask"][0]):
                break
    return frames, info


def _figure_class() -> Any:
    """matplotlib's ``Figure``, imported on demand; a one-line error when it is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise DingLiteError(
            "render needs matplotlib: pip install matplotlib "
            "(in a ding_lite checkout: pip install -e '.[render]')"
        ) from None
    return Figure


def _draw(figure_cls: Any, frames: list[Frame], title: str, out: Path) -> None:
    """Draws tracks (km), missile flights, start and kill markers; writes ``out``."""
    km = 1e-3
    x = torch.stack([f.x for f in frames]) * km  # [T, 2]
    y = torch.stack([f.y for f in frames]) * km
    alive = torch.stack([f.alive for f in frames])
    m_x = torch.stack([f.m_x for f in frames]) * km  # [T, 2, M]
    m_y = torch.stack([f.m_y for f in frames]) * km
    m_active = torch.stack([f.m_active for f in frames])
    fig = figure_cls(figsize=(7.0, 7.4))
    ax = fig.add_subplot()
    half = P.ARENA_HALF * km
    ax.plot([-half, half, half, -half, -half], [-half, -half, half, half, -half], color="0.7")
    for side, (name, color) in enumerate(zip(("P1", "P2"), COLORS, strict=True)):
        ax.plot(x[:, side], y[:, side], color=color, lw=1.6, label=name)
        ax.plot(x[0, side], y[0, side], "o", color=color, ms=7, mfc="white", mew=2)
        dead = (~alive[:, side]).nonzero()
        if len(dead):
            t = int(dead[0, 0])
            ax.plot(x[t, side], y[t, side], "X", color=color, ms=13, mec="black")
        for slot in range(m_active.shape[2]):
            for start, stop in _flights(m_active[:, side, slot]):
                ax.plot(
                    m_x[start:stop, side, slot],
                    m_y[start:stop, side, slot],
                    ls="--",
                    lw=0.8,
                    color=color,
                )
    ax.plot([], [], "o", color="0.3", mfc="white", mew=2, label="start")
    ax.plot([], [], "X", color="0.3", mec="black", ms=10, label="destroyed")
    ax.plot([], [], "--", color="0.3", lw=0.8, label="missile")
    ax.set_xlim(-half * 1.02, half * 1.02)
    ax.set_ylim(-half * 1.02, half * 1.02)
    ax.set_aspect("equal")
    ax.set_xlabel("x (km)")
    ax.set_ylabel("y (km)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def _flights(active: Tensor) -> list[tuple[int, int]]:
    """``[start, stop)`` frame ranges of each flight in a slot's bool ``[T]`` active flags.

    A flight's range includes the frame after its last active one, where the missile hit
    or ran out of fuel (that frame still holds its final position).
    """
    flights = []
    start = None
    for t, on in enumerate(active.tolist()):
        if on and start is None:
            start = t
        elif not on and start is not None:
            flights.append((start, t + 1))
            start = None
    if start is not None:
        flights.append((start, len(active)))
    return flights
