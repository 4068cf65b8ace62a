"""The main player's side of a league, kept where the main policy learns: its snapshots
joining the pool on their schedule, the matches its collectors played booked in the table,
the table written for ``ding-lite league`` and ``league/*`` logged.

The serial pipeline keeps one beside its learner (with the exploiters,
:mod:`ding_lite.entry.pipelines.league_serial`); the parallel pipeline's learner keeps one
and publishes its draw sheet with every policy (:meth:`LeagueDesk.sheet`); its collectors
hand each match's outcome back in their rollout files (:meth:`LeagueDesk.book_matches`).
Everything rides in the learner's checkpoints, so a resumed run has the pool, table and
ratings the interrupted one had.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ding_lite.data.files import LEAGUE_DIR, write_member
from ding_lite.envs.matrix_game import payoff_matrix
from ding_lite.league.book import MAIN, LeagueBook, check_parallel_league, write_table
from ding_lite.league.matrix import exploitability
from ding_lite.league.table import LeagueError
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.worker.learner.learner_hook import CallbackHook

LEAGUE_SEED_OFFSET = 7_919  # the league's draws and the exploiters' seeds, from the run's
# The league's hooks: after the log hooks (10, 20) and a resume's load (20), before the
# checkpoint hook (40), so a checkpoint holds the league as the iteration left it.
LEAGUE_PRIORITY = 30
EXPLOITER_STARTS = ("first", "main")  # league.exploiter_start


def check_league_config(cfg: Any, num_agents: int) -> None:
    """One-line errors for a league config that cannot run on an env with ``num_agents``
    agents a copy."""
    lc = cfg.league
    if num_agents != 2:
        raise ConfigError(
            f"league.enabled needs an env with two agents a copy (one policy for either "
            f"side); env '{cfg.env.name}' has {num_agents}"
        )
    for key in ("snapshot_every", "exploiter_max_iters", "window"):
        if not (isinstance(lc[key], int) and lc[key] >= 1):
            raise ConfigError(f"league.{key} must be a positive int, got {lc[key]!r}")
    for key in ("main_exploiters", "league_exploiters", "pool_limit"):
        if not (isinstance(lc[key], int) and lc[key] >= 0):
            raise ConfigError(f"league.{key} must be an int >= 0, got {lc[key]!r}")
    for key in ("exploiter_reset_score", "admit_score"):
        value = lc[key]
        if value is not None and not 0.0 < value <= 1.0:
            raise ConfigError(f"league.{key} must be in (0, 1], got {value!r}")
    if lc.exploiter_start not in EXPLOITER_STARTS:
        raise ConfigError(
            f"league.exploiter_start must be one of {', '.join(EXPLOITER_STARTS)}, "
            f"got {lc.exploiter_start!r}"
        )
    if cfg.policy.model.core != "none":
        raise ConfigError("a league plays feed-forward policies; set policy.model.core=none")
    if lc.mirror:
        if not mirror_copies(cfg):
            raise ConfigError(
                f"league.mirror plays the self-play share on mirror copies; with "
                f"league.shares {dict(lc.shares)} and env.num_envs={cfg.env.num_envs} "
                "there are none"
            )
        if cfg.collector.async_factor > 1 or cfg.env.reset_group_size > 1:
            raise ConfigError(
                "league.mirror needs collector.async_factor=1 and env.reset_group_size=1"
            )


def mirror_copies(cfg: Any) -> int:
    """The main player's mirror copies (``league.mirror``): the self-play share of
    ``env.num_envs``; 0 without ``league.mirror``."""
    lc = cfg.league
    if not lc.mirror:
        return 0
    total = sum(float(v) for v in lc.shares.values())
    share = float(lc.shares["self"]) / total if total > 0 else 0.0
    return round(share * cfg.env.num_envs)


class LeagueDesk:
    """The main player's side of a league (see the module's description).

    Args:
        cfg: the resolved config.
        book: the league's book (a serial run's :class:`~ding_lite.worker.collector.
            league_pool.League`, or a plain :class:`~ding_lite.league.book.LeagueBook`).
        folder: the run's league folder (the members' files and ``table.json``).
        model: the main player's live model.
    """

    def __init__(self, cfg: Any, book: LeagueBook, folder: Path, model: nn.Module) -> None:
        self.cfg, self.book, self.folder, self.model = cfg, book, Path(folder), model
        self.logger = get_logger("league")
        self.joined_at = 0  # the iteration the main player's last snapshot joined
        self.gap: float | None = None  # the main policy's exploitability (matrix games)
        self.lock = threading.Lock()  # matches are booked by the learner's task thread

    @classmethod
    def for_learner(
        cls, cfg: Any, run_path: Path, policy: Any, learner: Any, num_agents: int
    ) -> LeagueDesk | None:
        """A parallel run's learner's desk for ``policy`` (the main player), attached to
        ``learner`` (None: no league).

        Raises:
            ConfigError: a league that cannot run (:func:`check_league_config`,
                :func:`~ding_lite.league.book.check_parallel_league`).
        """
        lc = cfg.league
        if not lc.enabled:
            return None
        check_league_config(cfg, num_agents)
        check_parallel_league(cfg)
        try:
            book = LeagueBook(lc, cfg.seed + LEAGUE_SEED_OFFSET)
        except LeagueError as err:
            raise ConfigError(f"league: {err}") from None
        desk = cls(cfg, book, Path(run_path) / LEAGUE_DIR, policy.model)
        desk.attach(learner)
        return desk

    def attach(self, learner: Any, league: Any = None) -> None:
        """Rides in ``learner``'s checkpoints (``league``: ``league``'s state, this desk's
        by default), runs ``league.after_iter`` after each of its iterations
        and writes the table as the run starts (a resumed run's
        restored one: ``ding-lite league`` shows it before the first iteration)."""
        league = self if league is None else league
        learner.register_state("league", league)
        learner.register_hook(
            CallbackHook(
                "league",
                LEAGUE_PRIORITY,
                position="after_iter",
                callback=lambda e: league.after_iter(e.train_iter, e.envstep, e.tb_logger),
            )
        )
        learner.register_hook(
            CallbackHook(
                "league_table",
                LEAGUE_PRIORITY,
                position="before_run",
                callback=lambda e: self.before_run(e.train_iter),
            )
        )

    def before_run(self, train_iter: int) -> None:
        """Writes the table as the run starts; says what a resumed run took back."""
        book = self.book
        if book.pool or book.matches:
            self.logger.info(
                f"league taken back at iteration {train_iter}: {len(book.pool)} pool "
                f"member(s), {book.matches} match(es), main rated {book.table.ratings[MAIN]:.1f}"
            )
        with self.lock:
            write_table(self.folder, book, train_iter, self.exploitability())

    # --- after each iteration of the main player ------------------------------------------
    def after_iter(self, train_iter: int, envstep: int, tb_logger: Any) -> None:
        """Admits the main player's snapshot when due, logs ``league/*`` and writes the
        table (the serial league trains its exploiters in between: it calls the parts)."""
        self.admit_main(train_iter)
        self.finish_iter(train_iter, envstep, tb_logger)

    def admit_main(self, train_iter: int) -> None:
        """The main player's snapshot joins the pool every ``snapshot_every`` iterations
        (the first at once), or once it scores ``admit_score`` against every active member."""
        lc, book = self.cfg.league, self.book
        with self.lock:
            due = train_iter - self.joined_at >= lc.snapshot_every or not book.pool
            if not due and lc.admit_score is not None:  # the scores only when they can decide
                scores = [book.table.win_rate(MAIN, m) for m in book.active_pool]
                due = bool(scores) and min(scores) >= lc.admit_score
            if not due:
                return
            name = f"main-{train_iter:06d}"
            write_member(self.folder, name, self.model.state_dict())
            book.join(name, rating_of=MAIN)
            self.joined_at = train_iter
        self.logger.info(f"{name} joined the pool ({len(book.pool)} members)")

    def finish_iter(self, train_iter: int, envstep: int, tb_logger: Any) -> None:
        """Logs ``league/*`` and writes ``table.json`` after ``train_iter``."""
        self.gap = gap = self.exploitability()
        with self.lock:
            book = self.book
            if tb_logger is not None:
                tb_logger.add_scalar("league/pool_size", len(book.pool), envstep)
                tb_logger.add_scalar("league/main_rating", book.table.ratings[MAIN], envstep)
                if (score := book.recent_score(MAIN)) is not None:
                    tb_logger.add_scalar("league/main_score", score, envstep)
                if gap is not None:
                    tb_logger.add_scalar("league/exploitability", gap, envstep)
            write_table(self.folder, book, train_iter, gap)

    def exploitability(self) -> float | None:
        """The main policy's exploitability on a matrix game (None on other envs)."""
        if self.cfg.env.name != "matrix_game":
            return None
        probs = action_probs(self.model, torch.ones(1, 1))
        return exploitability(payoff_matrix(self.cfg.env.kwargs.get("payoff", "biased_rps")), probs)

    # --- a parallel run's collectors ----------------------------------------------------
    def sheet(self) -> dict[str, float]:
        """The main player's draws, each opponent's probability (published with each
        policy)."""
        with self.lock:
            return self.book.sheet(MAIN)

    def book_all(self, files: list[tuple[str, Any]]) -> None:
        """Books the matches of each ``(file, matches)`` (see :meth:`book_matches`)."""
        for source, matches in files:
            self.book_matches(matches, source)

    def book_matches(self, matches: Any, source: str) -> int:
        """Books the matches a rollout file carried (``[opponent, outcome]`` each, the
        outcome +1, 0 or -1 from the main player's side); returns how many. A file's
        matches that do not read as such, or name no member, are left out (one warning)."""
        if not _well_formed(matches):
            self.logger.warning(f"{source}: league matches left out (not [name, outcome] pairs)")
            return 0
        booked, unknown = 0, set()
        with self.lock:
            known = set(self.book.pool) | {MAIN}
            for name, outcome in matches:
                if name in known:
                    self.book.report(MAIN, name, float(outcome))
                    booked += 1
                else:
                    unknown.add(name)
        if unknown:
            self.logger.warning(
                f"{source}: matches against unknown members {sorted(unknown)[:3]} left out"
            )
        return booked

    # --- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        with self.lock:
            return {"league": self.book.state_dict(), "joined_at": self.joined_at}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Takes back :meth:`state_dict` (a state that does not fit: ConfigError, nothing
        changed)."""
        try:
            joined_at = int(state["joined_at"])
            with self.lock:
                self.book.load_state_dict(state["league"])
        except (KeyError, TypeError, ValueError, LeagueError) as err:
            raise ConfigError(f"league: {err}") from None
        self.joined_at = joined_at


def _well_formed(matches: Any) -> bool:
    return isinstance(matches, list) and all(
        isinstance(m, list | tuple)
        and len(m) == 2
        and isinstance(m[0], str)
        and isinstance(m[1], int | float)
        and not isinstance(m[1], bool)
        and math.isfinite(m[1])
        and -1.0 <= m[1] <= 1.0
        for m in matches
    )


def action_probs(model: Any, obs: torch.Tensor) -> list[float]:
    """A discrete policy's action probabilities at one raw observation ``[1, ...]``."""
    with torch.inference_mode():
        rms = getattr(model, "obs_rms", None)
        if rms is not None:
            obs = rms.normalize(obs)
        return model.get_dist(obs).probs[0].tolist()
