"""The models of a league: the serial run's :class:`League` (the book of
:mod:`ding_lite.league.book` with each player's model and the pool's frozen members), and
the seatings that put them in a collector's copies (the env side,
:class:`~ding_lite.envs.seats.SeatedEnv`):

- :class:`PlayerSeating`: one player of a serial run's league, drawn by its book;
- :class:`SheetSeating`: a parallel run's collector, drawing from the *sheet* its learner
  publishes with each policy and handing the matches' outcomes back in its rollouts.

Members are read with ``weights_only=True`` (:func:`~ding_lite.data.files.read_member`) and
must fit the main model; a file that does not is a one-line
:class:`~ding_lite.utils.errors.CheckpointError`.
"""

from __future__ import annotations

import copy
import random
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from ding_lite.data.files import LEAGUE_DIR, read_member, write_member
from ding_lite.envs.seats import seat
from ding_lite.league.book import MAIN, LeagueBook, renamed
from ding_lite.league.table import LeagueError
from ding_lite.utils.errors import CheckpointError, ConfigError

if TYPE_CHECKING:
    from ding_lite.model import ActorCritic

__all__ = [
    "MAIN",
    "League",
    "PlayerSeating",
    "PolicyOpponent",
    "SheetSeating",
    "seat_for_league",
]
CACHED_MODELS = 256  # frozen members kept loaded at once (least recently used go)


class PolicyOpponent:
    """Plays agent 1 with a model: actions sampled from its distribution, on observations
    normalized with the model's own statistics (``obs_rms``) when it has them.

    ``features``: the model observes only the leading ``features`` of each (flat)
    observation: a policy trained on a smaller observation of the env, whose features lead
    the larger one's (air combat's ``observe="base"`` in ``"missiles"``); None: all."""

    def __init__(self, model: ActorCritic, features: int | None = None) -> None:
        if getattr(model, "recurrent", False):
            raise CheckpointError(
                "a league plays feed-forward policies; this model has a recurrent core"
            )
        self.model = model
        self.features = features

    @torch.inference_mode()
    def act(self, obs: Tensor) -> Tensor:
        if self.features is not None:
            obs = obs[:, : self.features]
        rms = getattr(self.model, "obs_rms", None)
        if rms is not None:
            obs = rms.normalize(obs)
        action, _, _ = self.model.act(obs)
        return action


class Members:
    """Opponents by name: live players' models as they learn, the pool's frozen members
    read from ``folder`` on first use (the newest :data:`CACHED_MODELS` kept loaded).

    Args:
        folder: where the members' files live (``<run dir>/league``).
        template: a model of the run's kind (members are loaded into copies of it).
        live: name -> a live model (``main``, exploiters).
    """

    def __init__(self, folder: Path, template: ActorCritic, live: dict[str, ActorCritic]) -> None:
        self.folder = Path(folder)
        self.template = template
        self.live = live
        self._loaded: OrderedDict[str, PolicyOpponent] = OrderedDict()

    def get(self, name: str) -> PolicyOpponent:
        if name in self.live:
            return PolicyOpponent(self.live[name])
        if name in self._loaded:
            self._loaded.move_to_end(name)
            return self._loaded[name]
        model = copy.deepcopy(self.template)
        try:
            model.load_state_dict(read_member(self.folder, name))
        except (RuntimeError, KeyError, TypeError) as err:
            first = str(err).strip().splitlines()[0]
            raise CheckpointError(
                f"league member {name!r} does not fit the model: {first}"
            ) from None
        opponent = PolicyOpponent(model.eval().requires_grad_(False))
        self._loaded[name] = opponent
        while len(self._loaded) > CACHED_MODELS:
            self._loaded.popitem(last=False)
        return opponent

    def clear(self) -> None:
        self._loaded.clear()


class League(LeagueBook):
    """A serial run's league: the book of :mod:`ding_lite.league.book` with the players'
    models and the pool's member files.

    Args:
        cfg: the run's ``league`` config section.
        folder: where the pool's snapshot files live (``<run dir>/league``).
        main_model: the main player's live model (self-play acts with it as it learns).
        seed: the matchmaker's seed.
    """

    def __init__(self, cfg: Any, folder: Path, main_model: ActorCritic, seed: int) -> None:
        super().__init__(cfg, seed)
        self.folder = Path(folder)
        self.main_model = main_model
        self.members = Members(self.folder, main_model, {MAIN: main_model})

    def add_player(self, name: str, role: str, model: ActorCritic) -> None:  # type: ignore[override]
        """A live player (an exploiter) with its model; its table entry starts as main's."""
        super().add_player(name, role)
        self.members.live[name] = model

    def rename_player(self, old: str, new: str) -> None:
        super().rename_player(old, new)
        self.members.live = renamed(self.members.live, old, new, self.members.live[old])

    def opponent(self, name: str) -> PolicyOpponent:
        """The member or live player ``name`` as an opponent."""
        if name not in self.members.live and name not in self.pool:
            raise LeagueError(f"{name!r} is not a member of the league")
        return self.members.get(name)

    def admit(self, name: str, model: ActorCritic, rating_of: str) -> None:
        """Freezes ``model`` as the pool member ``name`` (its file written atomically), rated
        as ``rating_of`` is now."""
        if name in self.pool or name in self.players:
            raise LeagueError(f"cannot admit {name!r}: a bad or taken name")
        write_member(self.folder, name, model.state_dict())
        self.join(name, rating_of)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Takes back :meth:`state_dict` (live players keep their models, matched by role
        in the saved order); raises LeagueError with nothing changed."""
        models = list(self.members.live.values())
        super().load_state_dict(state)
        self.members.live = dict(zip(self.players, models, strict=True))
        self.members.clear()


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


class SheetSeating:
    """A parallel run's collector's :class:`~ding_lite.envs.seats.Seating`: opponents drawn
    from the sheet the learner publishes with each policy (``{name: probability}``, the
    main player's own name for self-play with the collector's current policy), the pool's
    members read from the run's league folder, and each match's outcome kept for the next
    rollout file (:meth:`drain`), whose learner books it.

    Args:
        folder: the run's league folder.
        model: the collector's live model (``main``).
        seed: the draws' seed.
    """

    def __init__(self, folder: Path, model: ActorCritic, seed: int) -> None:
        self.members = Members(folder, model, {MAIN: model})
        self.rng = random.Random(seed)
        self._sheet: dict[str, float] = {MAIN: 1.0}
        self._matches: list[list[Any]] = []

    def follow(self, sheet: dict[str, float] | None) -> None:
        """Draws from ``sheet`` from now on (None: self-play only); called by the
        collection loop as it swaps in the policy the sheet came with."""
        self._sheet = dict(sheet) if sheet else {MAIN: 1.0}

    def pick(self, count: int) -> list[str]:
        return self.rng.choices(list(self._sheet), list(self._sheet.values()), k=count)

    def opponent(self, name: str) -> PolicyOpponent:
        return self.members.get(name)

    def report(self, name: str, outcome: float) -> None:
        self._matches.append([name, float(outcome)])

    def drain(self) -> list[list[Any]]:
        """The matches that ended since the last call, ``[opponent, outcome]`` each."""
        matches, self._matches = self._matches, []
        return matches


def seat_for_league(cfg: Any, env: Any, model: ActorCritic, seed: int) -> tuple[Any, Any]:
    """A parallel run's collector env: ``(env seated, its SheetSeating)`` with
    ``league.enabled`` (the pool read from ``<exp_dir>/league``), else ``(env, None)``.

    Raises:
        ConfigError: the env does not have two agents a copy.
    """
    if not cfg.league.enabled:
        return env, None
    seating = SheetSeating(Path(cfg.exp_dir) / LEAGUE_DIR, model, seed)
    try:
        return seat(env, seating), seating
    except ValueError as err:
        raise ConfigError(str(err)) from None
