"""The league of a serial run (``league.enabled``): the run's own policy is the main
player; exploiters, policies of their own, train in turn with it, one iteration each after
each of its iterations; snapshots join the pool on their schedule.

The main player's collector and every exploiter's see a :class:`~ding_lite.envs.seats.
SeatedEnv`: agent 0 is the player, agent 1 the opponent its seating names (see
:mod:`ding_lite.worker.collector.league_pool`). Everything a resumed run needs (table,
draws, pool, exploiters' policies and collectors) rides in the main learner's checkpoints
under ``league``, so a run killed and resumed goes on as an unbroken one would.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

from ding_lite.entry.reporting.league_table import league_status, write_league_table
from ding_lite.envs.buffered import BufferedEnv, build_collector_env
from ding_lite.envs.matrix_game import payoff_matrix
from ding_lite.envs.seats import SeatedEnv
from ding_lite.league.matrix import exploitability
from ding_lite.league.table import LeagueError
from ding_lite.policy import create_policy
from ding_lite.policy.build import seed_updates
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.collector.league_pool import LEAGUE_DIR, MAIN, League, PlayerSeating
from ding_lite.worker.learner.learner_hook import LearnerHook

LEAGUE_SEED_OFFSET = 7_919  # the league's draws and the exploiters' seeds, from the run's


def check_league_config(cfg: Any, env: Any) -> None:
    """One-line errors for a league config that cannot run on ``env``."""
    lc = cfg.league
    if getattr(env, "num_agents", 1) != 2:
        raise ConfigError(
            f"league.enabled needs an env with two agents a copy (one policy for either "
            f"side); env '{cfg.env.name}' has {getattr(env, 'num_agents', 1)}"
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
    if cfg.policy.model.core != "none":
        raise ConfigError("a league plays feed-forward policies; set policy.model.core=none")


def seat(env: Any, seating: Any) -> Any:
    """``env`` (or each group of a BufferedEnv) seated with ``seating``."""
    if isinstance(env, BufferedEnv):
        return BufferedEnv([SeatedEnv(group, seating) for group in env.groups])
    return SeatedEnv(env, seating)


class Exploiter:
    """An exploiter: its policy, its seated collector, its iterations and generation."""

    def __init__(self, league: League, role: str, index: int, cfg: Any, env: Any, seed: int):
        self.role, self.index = role, index
        self.generation = 0
        self.iters = 0  # in this generation
        self.policy = create_policy(
            cfg.policy,
            obs_shape=env.obs_shape,
            action_space=env.action_space,
            device=env.device,
            total_iters=None,
        )
        seed_updates(self.policy, seed)
        self.first_state = copy.deepcopy(self.policy.state_dict())
        league.add_player(self.name, role, self.policy.model)
        self.seating = PlayerSeating(league, self.name)
        env = build_collector_env(cfg, cfg.env.num_envs, env.device, seed)
        self.collector = SerialCollector.from_config(
            seat(env, self.seating), self.policy, cfg, seed
        )

    @property
    def name(self) -> str:
        return f"{self.role}{self.index}-g{self.generation}"

    def train_one(self) -> dict[str, float]:
        data = self.collector.collect()
        learn = self.policy.learn_mode
        self.iters += 1
        return learn.forward(learn.prepare(data))

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "iters": self.iters,
            "policy": self.policy.state_dict(),
            "collector": self.collector.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation, self.iters = int(state["generation"]), int(state["iters"])
        self.seating.player = self.name
        self.policy.load_state_dict(state["policy"])
        self.collector.load_state_dict(state["collector"])


class SerialLeague:
    """The league of one serial run (see the module's description).

    Args:
        cfg: the resolved config.
        run_path: the run dir (the pool lives in its ``league`` folder).
        policy: the main player's policy (the run's own).
        env: the run's collector env, not yet seated (the exploiters' envs are built like
            it, on its device).

    Raises:
        ConfigError: the env or the league section does not fit.
    """

    def __init__(self, cfg: Any, run_path: Path, *, policy: Any, env: Any) -> None:
        check_league_config(cfg, env)
        self.cfg = cfg
        self.main_policy = policy
        self.logger = get_logger("league")
        seed = cfg.seed + LEAGUE_SEED_OFFSET
        try:
            self.folder = run_path / LEAGUE_DIR
            self.league = League(cfg.league, self.folder, policy.model, seed)
        except LeagueError as err:
            raise ConfigError(f"league: {err}") from None
        self.joined_at = 0  # the iteration the main player's last snapshot joined
        self.gap: float | None = None  # the main policy's exploitability (matrix games)
        roles = ["main_exploiter"] * cfg.league.main_exploiters
        roles += ["league_exploiter"] * cfg.league.league_exploiters
        self.exploiters = [
            Exploiter(self.league, role, n, cfg, env, seed + 1 + n) for n, role in enumerate(roles)
        ]

    def seat_main(self, env: Any) -> Any:
        return seat(env, PlayerSeating(self.league, MAIN))

    # --- after each iteration of the main player ------------------------------------------
    def after_iter(self, train_iter: int, envstep: int, tb_logger: Any) -> None:
        """Admits the main player's snapshot when due, trains each exploiter one iteration
        (starting it over when it has won enough or played long enough), and logs
        ``league/*``."""
        self._admit_main(train_iter)
        for exploiter in self.exploiters:
            exploiter.train_one()
            self._maybe_reset(exploiter, train_iter)
        self.gap = self._log(tb_logger, envstep)
        write_league_table(self.folder, self.league, train_iter, self.gap)

    def status(self) -> dict[str, Any]:
        """status.json's ``league`` section."""
        return league_status(self.league, self.gap)

    def _admit_main(self, train_iter: int) -> None:
        lc, league = self.cfg.league, self.league
        due = train_iter - self.joined_at >= lc.snapshot_every or not league.pool
        if not due and lc.admit_score is not None:  # the scores only when they can decide
            scores = [league.table.win_rate(MAIN, m) for m in league.active_pool]
            due = bool(scores) and min(scores) >= lc.admit_score
        if due:
            name = f"main-{train_iter:06d}"
            league.admit(name, self.main_policy.model, rating_of=MAIN)
            self.joined_at = train_iter
            self.logger.info(f"{name} joined the pool ({len(league.pool)} members)")

    def _maybe_reset(self, exploiter: Exploiter, train_iter: int) -> None:
        lc, league = self.cfg.league, self.league
        score = league.recent_score(exploiter.name)
        won = score is not None and score >= lc.exploiter_reset_score
        if not (won or exploiter.iters >= lc.exploiter_max_iters):
            return
        old = exploiter.name
        league.admit(f"{old}-{train_iter:06d}", exploiter.policy.model, rating_of=old)
        exploiter.generation += 1
        exploiter.iters = 0
        league.rename_player(old, exploiter.name)
        exploiter.seating.player = exploiter.name
        exploiter.policy.load_state_dict(copy.deepcopy(exploiter.first_state))
        why = f"scored {score:.2f}" if won else f"played {lc.exploiter_max_iters} iterations"
        self.logger.info(f"{old} {why}; it joined the pool and starts over")

    def _log(self, tb_logger: Any, envstep: int) -> float | None:
        """Logs ``league/*``; returns the main policy's exploitability (matrix games)."""
        gap = self.exploitability()
        if tb_logger is None:
            return gap
        league = self.league
        tb_logger.add_scalar("league/pool_size", len(league.pool), envstep)
        tb_logger.add_scalar("league/main_rating", league.table.ratings[MAIN], envstep)
        score = league.recent_score(MAIN)
        if score is not None:
            tb_logger.add_scalar("league/main_score", score, envstep)
        if gap is not None:
            tb_logger.add_scalar("league/exploitability", gap, envstep)
        return gap

    def exploitability(self) -> float | None:
        """The main policy's exploitability on a matrix game (None on other envs)."""
        if self.cfg.env.name != "matrix_game":
            return None
        probs = action_probs(self.main_policy.model, torch.ones(1, 1))
        return exploitability(payoff_matrix(self.cfg.env.kwargs.get("payoff", "biased_rps")), probs)

    # --- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "league": self.league.state_dict(),
            "joined_at": self.joined_at,
            "exploiters": [e.state_dict() for e in self.exploiters],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("exploiters", [])
        if len(saved) != len(self.exploiters):
            raise ConfigError(
                f"the checkpoint's league has {len(saved)} exploiter(s), this run "
                f"{len(self.exploiters)}; resume with the same league.*_exploiters"
            )
        try:
            self.league.load_state_dict(state["league"])
        except LeagueError as err:
            raise ConfigError(f"league: {err}") from None
        self.joined_at = int(state["joined_at"])
        for exploiter, exploiter_state in zip(self.exploiters, saved, strict=True):
            exploiter.load_state_dict(exploiter_state)

    def close(self) -> None:
        for exploiter in self.exploiters:
            exploiter.collector.close()


class LeagueHook(LearnerHook):
    """Runs :meth:`SerialLeague.after_iter` in the main learner's ``after_iter``, before the
    checkpoint hook, so a checkpoint holds the league as the iteration left it."""

    default_priority = 30  # after the log hooks (10, 20), before save_ckpt (40)

    def __init__(self, league: SerialLeague) -> None:
        super().__init__("league", position="after_iter")
        self.league = league

    def __call__(self, engine: Any) -> None:
        self.league.after_iter(engine.train_iter, engine.envstep, engine.tb_logger)


def action_probs(model: Any, obs: torch.Tensor) -> list[float]:
    """A discrete policy's action probabilities at one raw observation ``[1, ...]``."""
    with torch.inference_mode():
        rms = getattr(model, "obs_rms", None)
        if rms is not None:
            obs = rms.normalize(obs)
        return model.get_dist(obs).probs[0].tolist()
