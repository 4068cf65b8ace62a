"""The league a collector's copies play in: players, the pool of frozen snapshots, who meets
whom, and the table every match's outcome moves.

A *player* learns (the ``main`` player, the run's own policy; exploiters, policies of
their own); a *member* is anyone a player can meet: the pool's frozen snapshots, each a
model file in the run's ``league/`` folder, and the ``main`` player itself (self-play and
the exploiters' matches). Each player seats its collector's copies through a
:class:`PlayerSeating` (the env side, :class:`~ding_lite.envs.seats.SeatedEnv`):

- ``main``: the :class:`~ding_lite.league.Matchmaker`'s draw over the pool (self-play,
  PFSP, checks of old members);
- a ``main_exploiter``: always the current ``main``;
- a ``league_exploiter``: PFSP over the pool (the current ``main`` while it is empty).

Snapshots are read with ``weights_only=True`` and must fit the main model; a file that does
not is a one-line :class:`~ding_lite.utils.errors.CheckpointError`.
"""

from __future__ import annotations

import copy
import re
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ding_lite.league import LeagueTable, Matchmaker
from ding_lite.league.table import LeagueError
from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import atomic_torch_save

MAIN = "main"
ROLES = ("main", "main_exploiter", "league_exploiter")
LEAGUE_DIR = "league"
_SNAPSHOT_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
CACHED_MODELS = 256  # frozen members kept loaded at once (least recently used go)


class PolicyOpponent:
    """Plays agent 1 with a model: actions sampled from its distribution, on observations
    normalized with the model's own statistics (``obs_rms``) when it has them."""

    def __init__(self, model: nn.Module) -> None:
        if getattr(model, "recurrent", False):
            raise CheckpointError(
                "a league plays feed-forward policies; this model has a recurrent core"
            )
        self.model = model

    @torch.inference_mode()
    def act(self, obs: Tensor) -> Tensor:
        rms = getattr(self.model, "obs_rms", None)
        if rms is not None:
            obs = rms.normalize(obs)
        action, _, _ = self.model.act(obs)
        return action


class League:
    """Players, pool, matchmaking and table of one run (see the module's description).

    Args:
        cfg: the run's ``league`` config section.
        folder: where the pool's snapshot files live (``<run dir>/league``).
        main_model: the main player's live model (self-play acts with it as it learns).
        seed: the matchmaker's seed.
    """

    def __init__(self, cfg: Any, folder: Path, main_model: nn.Module, seed: int) -> None:
        self.cfg = cfg
        self.folder = Path(folder)
        self.main_model = main_model
        self.table = LeagueTable(cfg.elo_k)
        self.table.add(MAIN)
        shares = dict(cfg.shares)
        self.matchmaker = Matchmaker(self.table, shares, cfg.weighting, seed)
        self._exploiter_draws = Matchmaker(self.table, {"pfsp": 1.0}, cfg.weighting, seed + 1)
        #: Frozen members, in joining order.
        self.pool: list[str] = []
        #: Live players: name -> role.
        self.players: dict[str, str] = {MAIN: "main"}
        #: Each player's recent outcomes against non-self opponents (+1 / 0 / -1).
        self.recent: dict[str, deque[float]] = {MAIN: deque(maxlen=cfg.window)}
        self.matches = 0  # matches booked in all (self-play included)
        self._live: dict[str, nn.Module] = {MAIN: main_model}
        self._loaded: OrderedDict[str, PolicyOpponent] = OrderedDict()

    # --- players -----------------------------------------------------------------------
    def add_player(self, name: str, role: str, model: nn.Module) -> None:
        """A live player (an exploiter) with its model; its table entry starts as main's."""
        if role not in ROLES:
            raise LeagueError(f"unknown league role {role!r}; one of {', '.join(ROLES)}")
        self.table.add(name, self.table.ratings[MAIN])
        self.players[name] = role
        self.recent[name] = deque(maxlen=self.cfg.window)
        self._live[name] = model

    def rename_player(self, old: str, new: str) -> None:
        """A player's next generation (an exploiter after its reset) under a new name, in
        its place among the players (a saved league matches players by place)."""
        self.table.add(new, self.table.ratings[MAIN])

        def renamed(mapping: dict[str, Any], value: Any) -> dict[str, Any]:
            return {new if k == old else k: value if k == old else v for k, v in mapping.items()}

        self.players = renamed(self.players, self.players[old])
        self._live = renamed(self._live, self._live[old])
        self.recent = renamed(self.recent, deque(maxlen=self.cfg.window))

    def recent_score(self, player: str) -> float | None:
        """The player's mean score (1 win, 0.5 draw, 0 loss) over its recent matches."""
        recent = self.recent[player]
        if not recent:
            return None
        return sum((x + 1.0) / 2.0 for x in recent) / len(recent)

    # --- seats ---------------------------------------------------------------------------
    def pick(self, player: str, count: int = 1) -> list[str]:
        """The opponents of ``player``'s next ``count`` matches (see the module's
        description)."""
        role = self.players[player]
        active = self.active_pool
        if role == "main_exploiter" or (role == "league_exploiter" and not active):
            return [MAIN] * count
        draws = self._exploiter_draws if role == "league_exploiter" else self.matchmaker
        return [name for name, _ in draws.opponents(player, active, count)]

    @property
    def active_pool(self) -> list[str]:
        """The members drawn as opponents: the newest ``pool_limit`` (0: all)."""
        limit = self.cfg.pool_limit
        return self.pool[-limit:] if limit else list(self.pool)

    def report(self, player: str, opponent: str, outcome: float) -> None:
        """Books a match of ``player`` against ``opponent`` (``outcome`` from the player's
        side); self-play counts, but moves no table entry."""
        self.matches += 1
        if opponent == player:
            return
        outcome = min(max(outcome, -1.0), 1.0)
        self.table.record(player, opponent, (outcome + 1.0) / 2.0)
        self.recent[player].append(outcome)

    def opponent(self, name: str) -> PolicyOpponent:
        """The member or live player ``name`` as an opponent."""
        if name in self._live:
            return PolicyOpponent(self._live[name])
        if name in self._loaded:
            self._loaded.move_to_end(name)
            return self._loaded[name]
        if name not in self.pool:
            raise LeagueError(f"{name!r} is not a member of the league")
        opponent = PolicyOpponent(self._read_snapshot(name))
        self._loaded[name] = opponent
        while len(self._loaded) > CACHED_MODELS:
            self._loaded.popitem(last=False)
        return opponent

    # --- the pool ------------------------------------------------------------------------
    def admit(self, name: str, model: nn.Module, rating_of: str) -> None:
        """Freezes ``model`` as the pool member ``name`` (its file written atomically), rated
        as ``rating_of`` is now."""
        if not _SNAPSHOT_RE.fullmatch(name) or name in self.pool or name in self.players:
            raise LeagueError(f"cannot admit {name!r}: a bad or taken name")
        self.folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        atomic_torch_save({"league_member": name, "model": state}, self._path(name))
        self.table.add(name, self.table.ratings[rating_of])
        self.pool.append(name)

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.pt"

    def _read_snapshot(self, name: str) -> nn.Module:
        path = self._path(name)
        try:
            saved = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - any unreadable file is one line
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise CheckpointError(f"league member {path} cannot be read: {first}") from None
        if not (isinstance(saved, dict) and saved.get("league_member") == name):
            raise CheckpointError(f"{path} is not the league member {name!r}")
        model = copy.deepcopy(self.main_model)
        try:
            model.load_state_dict(saved["model"])
        except (RuntimeError, KeyError, TypeError) as err:
            first = str(err).strip().splitlines()[0]
            raise CheckpointError(f"league member {path} does not fit the model: {first}") from None
        return model.eval().requires_grad_(False)

    # --- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Table, draws, pool, players and recent outcomes (plain values)."""
        return {
            "table": self.table.state(),
            "matchmaker": self.matchmaker.state(),
            "exploiter_draws": self._exploiter_draws.state(),
            "pool": list(self.pool),
            "players": dict(self.players),
            "recent": {name: list(values) for name, values in self.recent.items()},
            "matches": self.matches,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Takes back :meth:`state_dict`: checked whole, then applied (live players keep
        their models, matched by role in the saved order).

        Raises:
            LeagueError: the state does not fit this league (nothing is changed).
        """
        try:
            table = LeagueTable.from_state(state["table"])
            pool, players, recent = state["pool"], state["players"], state["recent"]
            matchmaker = Matchmaker(table, dict(self.cfg.shares), self.cfg.weighting)
            matchmaker.load_state(state["matchmaker"])
            draws = Matchmaker(table, {"pfsp": 1.0}, self.cfg.weighting)
            draws.load_state(state["exploiter_draws"])
            matches = int(state["matches"])
        except (KeyError, TypeError, ValueError) as err:
            raise LeagueError(f"not a league state: {err}") from None
        known = set(table.members)
        if not (isinstance(pool, list) and all(name in known for name in pool)):
            raise LeagueError("the league state's pool names members the table does not know")
        if not isinstance(players, dict) or [*players.values()] != [*self.players.values()]:
            raise LeagueError(
                f"the league state's players {players!r:.120} do not fit this run's roles"
            )
        if set(players) - known or set(recent) != set(players):
            raise LeagueError("the league state's players are not in its table")
        models = list(self._live.values())
        self.table, self.matchmaker, self._exploiter_draws = table, matchmaker, draws
        self.pool, self.players, self.matches = list(pool), dict(players), matches
        self.recent = {
            name: deque((float(x) for x in recent[name]), maxlen=self.cfg.window)
            for name in players
        }
        self._live = dict(zip(players, models, strict=True))
        self._loaded.clear()


class PlayerSeating:
    """One player's :class:`~ding_lite.envs.seats.Seating` in a :class:`League`."""

    def __init__(self, league: League, player: str) -> None:
        self.league = league
        self.player = player

    def pick(self, count: int) -> list[str]:
        return self.league.pick(self.player, count)

    def opponent(self, name: str) -> PolicyOpponent:
        return self.league.opponent(name)

    def report(self, name: str, outcome: float) -> None:
        self.league.report(self.player, name, outcome)
