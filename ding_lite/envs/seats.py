"""``SeatedEnv``: a two-sided env seen by its learner as a one-agent env.

Agent 0 of every copy is the learner's; agent 1 is played by an opponent the env's
:class:`Seating` names for that copy. A copy keeps its opponent for a whole episode: when
its episode ends, the seating hears the outcome (from agent 0's side) and names the
opponent of the next one. So one collector's copies can meet several opponents at once
(a league's matches), each acting on the copies it is seated at.

What the wrapper shows is exactly a one-agent env (no agent axis): agent 0's observation,
reward, return and outcome; what ends per copy is unchanged. The opponents get agent 1's
raw observation and return its action in the env's per-agent encoding. The env itself is
untouched, so any env with ``num_agents == 2`` and an outcome per episode can be seated.

*Mirror copies* (``mirrored`` M > 0): the first M copies are self-play matches in which
the learner flies both sides and learns from both, as plain self-play does. They show as
M more rows after the N copies' agent-0 rows (``num_envs = N + M``): row ``N + i`` is agent
1 of copy ``i``, with its own observation, reward, return and outcome, and the copy's
ends. ``env_copies`` stays N, the env steps a step takes.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import torch
from torch import Tensor

from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.buffered import BufferedEnv


class Opponent(Protocol):
    """Plays agent 1 of the copies it is seated at."""

    def act(self, obs: Tensor) -> Tensor:
        """Agent 1's actions for its raw observations ``[n, *obs_shape]``, in the env's
        per-agent encoding (``[n]`` Discrete, ``[n, d]`` Box, ...)."""
        ...


class Seating(Protocol):
    """Names each copy's opponent and hears how its matches end."""

    def pick(self, count: int) -> list[str]:
        """The names of the opponents of ``count`` copies' next episodes."""
        ...

    def opponent(self, name: str) -> Opponent:
        """The opponent a name stands for (it may be built on first use)."""
        ...

    def report(self, name: str, outcome: float) -> None:
        """An episode against ``name`` ended: +1 agent 0 won, -1 lost, 0 a draw."""
        ...


class SeatedEnv:
    """``env`` (two agents a copy, an outcome per episode) with agent 1 played by the
    opponents ``seating`` names, shown as a one-agent env.

    It has what a collector reads and calls on an env (``num_envs``, ``num_agents``,
    ``device``, ``obs_shape``, ``action_space``, ``name``, ``reset_group_size``,
    ``reset``, ``step``, ``step_async``/``step_wait``, ``state_dict``, ``close``). The
    seats (each copy's opponent's name) ride in :meth:`state_dict`, so a resumed run seats
    the copies as the saved one did.

    Raises:
        ValueError: ``env`` does not have two agents a copy, or ``mirrored`` is not in
            ``[0, env.num_envs]``.
    """

    num_agents = 1

    def __init__(self, env: TensorVectorEnv, seating: Seating, mirrored: int = 0) -> None:
        if getattr(env, "num_agents", 1) != 2:
            raise ValueError(
                f"a league seats an opponent at agent 1 of an env with two agents a copy; "
                f"env '{env.name}' has {getattr(env, 'num_agents', 1)}"
            )
        if not 0 <= mirrored <= env.num_envs:
            raise ValueError(f"mirrored={mirrored}: not a number of {env.name}'s copies")
        self.env = env
        self.seating = seating
        self.mirrored = mirrored
        self.env_copies = env.num_envs  #: env copies (env steps a step takes)
        self.num_envs = env.num_envs + mirrored  #: rows: agent 0 of every copy, agent 1 of M
        self.device = env.device
        self.obs_shape = env.obs_shape
        self.action_space = env.action_space
        self.name = env.name
        self.reset_group_size = getattr(env, "reset_group_size", 1)
        #: Each copy's opponent, by name (a mirror copy's: the seating's first pick, kept).
        self.seats: list[str] = seating.pick(self.env_copies)
        self._obs1: Tensor | None = None  # agent 1's observation of the current step

    # --- the env's interface ---------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed)
        self._obs1 = obs[:, 1]
        return self._mine(obs), info

    def step(self, action: Tensor) -> StepResult:
        self.step_async(action)
        return self.step_wait()

    def step_async(self, action: Tensor) -> None:
        """Starts the step: agent 0 takes ``action`` (and agent 1 of the mirror copies its
        last M rows), every opponent acts at its seats."""
        n, m = self.env_copies, self.mirrored
        other = self._opponents_act()
        seated = [] if other is None else [other.to(action.dtype)]
        agent1 = torch.cat([action[n:], *seated]) if m else seated[0]
        self.env.step_async(torch.stack((action[:n], agent1), dim=1))

    def step_wait(self) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step_wait()
        self._obs1 = obs[:, 1]
        episode = info["episode"]
        if "outcome" not in episode:
            raise ValueError(
                f"env '{self.name}' reports no outcome per episode (info['episode']"
                "['outcome']): a league needs one to rate its matches"
            )
        self._reseat(episode["mask"], episode["outcome"][:, 0])
        mine = dict(info)
        mine["final_obs"] = self._mine(info["final_obs"])
        mine["episode"] = {k: self._mine_stat(k, v) for k, v in episode.items()}
        m = self.mirrored
        if m:
            terminated = torch.cat((terminated, terminated[:m]))
            truncated = torch.cat((truncated, truncated[:m]))
        return self._mine(obs), self._mine(reward), terminated, truncated, mine

    def state_dict(self) -> dict[str, Any]:
        """The env's state, the seats and agent 1's observation."""
        return {"env": self.env.state_dict(), "seats": list(self.seats), "obs1": self._obs1}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Takes back :meth:`state_dict` (the seats must fit the copies)."""
        seats = state.get("seats")
        if not (isinstance(seats, list) and len(seats) == self.env_copies):
            raise ValueError(f"{self.name}: the saved seats do not fit {self.env_copies} copies")
        if not all(isinstance(name, str) for name in seats):
            raise ValueError(f"{self.name}: a saved seat is not an opponent's name")
        obs1 = state.get("obs1")
        if obs1 is not None and (
            not isinstance(obs1, Tensor) or tuple(obs1.shape) != (self.env_copies, *self.obs_shape)
        ):
            raise ValueError(f"{self.name}: the saved observation of agent 1 does not fit")
        self.env.load_state_dict(state["env"])
        self.seats = list(seats)
        self._obs1 = None if obs1 is None else obs1.to(self.device)

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return f"SeatedEnv({self.env!r})"

    # --- rows ------------------------------------------------------------------------------
    def _mine(self, x: Tensor) -> Tensor:
        """An output with an agent axis ``[N, 2, ...]`` as the learner's rows: agent 0 of
        every copy, then agent 1 of the mirror copies."""
        m = self.mirrored
        return x[:, 0] if not m else torch.cat((x[:, 0], x[:m, 1]))

    def _mine_stat(self, key: str, value: Any) -> Any:
        """An episode statistic as the learner's rows (per copy ones repeated for the mirror
        copies' agent 1)."""
        if key in ("return", "outcome") and isinstance(value, Tensor) and value.dim() > 1:
            return self._mine(value)
        if self.mirrored and isinstance(value, Tensor) and value.dim() >= 1:
            return torch.cat((value, value[: self.mirrored]))
        return value

    # --- seats -----------------------------------------------------------------------------
    def _opponents_act(self) -> Tensor | None:
        """Agent 1's action of every copy past the mirror copies: each opponent acts for
        the copies it sits at."""
        obs = self._obs1
        if obs is None:
            raise RuntimeError(f"{self.name}: reset the env before its first step")
        m = self.mirrored
        rows_of: dict[str, list[int]] = {}
        for i, seat in enumerate(self.seats[m:]):
            rows_of.setdefault(seat, []).append(i)
        obs = obs[m:]
        action: Tensor | None = None
        for name in sorted(rows_of):
            index = torch.tensor(rows_of[name], device=self.device)
            acted = self.seating.opponent(name).act(obs.index_select(0, index))
            if action is None:
                action = acted.new_zeros((self.env_copies - m, *acted.shape[1:]))
            action.index_copy_(0, index, acted.to(action.dtype))
        return action  # None: every copy is a mirror copy

    def _reseat(self, ended: Tensor, outcome: Tensor) -> None:
        """Books the outcome of every copy whose episode ended, then seats its next
        opponent (one host sync a step, for the copies' indices). A mirror copy's match is
        booked as one of self-play and keeps its seat."""
        copies = ended.nonzero().flatten().tolist()
        if not copies:
            return
        outcomes = outcome[copies].tolist()
        for copy, result in zip(copies, outcomes, strict=True):
            self.seating.report(self.seats[copy], float(result))
        reseated = [copy for copy in copies if copy >= self.mirrored]
        for copy, name in zip(reseated, self.seating.pick(len(reseated)), strict=True):
            self.seats[copy] = name


def seat(env: Any, seating: Seating, mirrored: int = 0) -> Any:
    """``env`` (or each group of a :class:`~ding_lite.envs.buffered.BufferedEnv`) seated
    with ``seating``; ``mirrored``: mirror copies (one env only)."""
    if isinstance(env, BufferedEnv):
        if mirrored:
            raise ValueError("mirror copies need one env group (collector.async_factor=1)")
        # The groups of an env not seated yet: plain envs.
        return BufferedEnv([SeatedEnv(cast(TensorVectorEnv, g), seating) for g in env.groups])
    return SeatedEnv(env, seating, mirrored)
