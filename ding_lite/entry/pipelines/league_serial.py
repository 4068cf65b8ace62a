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

from ding_lite.data.files import LEAGUE_DIR
from ding_lite.entry.reporting.league_table import league_status
from ding_lite.envs.buffered import build_collector_env
from ding_lite.envs.seats import seat
from ding_lite.league.table import LeagueError
from ding_lite.policy import create_policy
from ding_lite.policy.build import seed_updates
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.collector.league_pool import MAIN, League, PlayerSeating
from ding_lite.worker.learner.league_desk import (
    LEAGUE_SEED_OFFSET,
    LeagueDesk,
    check_league_config,
    mirror_copies,
)


def exploiter_config(cfg: Any) -> Any:
    """The run's config with ``league.exploiter_env_kwargs`` over ``env.kwargs``."""
    if not cfg.league.exploiter_env_kwargs:
        return cfg
    out = copy.deepcopy(cfg)
    out.env.kwargs.update(cfg.league.exploiter_env_kwargs)
    return out


class Exploiter:
    """An exploiter: its policy, its seated collector, its iterations and generation."""

    def __init__(
        self, league: League, role: str, index: int, cfg: Any, env: Any, seed: int, main: Any
    ):
        self.role, self.index = role, index
        self.main = main if cfg.league.exploiter_start == "main" else None
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
        self.start_over()
        league.add_player(self.name, role, self.policy.model)
        self.seating = PlayerSeating(league, self.name)
        env = build_collector_env(exploiter_config(cfg), cfg.env.num_envs, env.device, seed)
        self.collector = SerialCollector.from_config(
            seat(env, self.seating), self.policy, cfg, seed
        )

    def start_over(self) -> None:
        """Back to the first weights (optimizer, schedule and all), or with ``exploiter_start
        = "main"`` to the main player's model of the moment with a fresh optimizer."""
        self.policy.load_state_dict(copy.deepcopy(self.first_state))
        if self.main is not None:
            self.policy.model.load_state_dict(self.main.state_dict())

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
        check_league_config(cfg, getattr(env, "num_agents", 1))
        self.cfg = cfg
        self.logger = get_logger("league")
        seed = cfg.seed + LEAGUE_SEED_OFFSET
        folder = run_path / LEAGUE_DIR
        try:
            self.league = League(cfg.league, folder, policy.model, seed)
        except LeagueError as err:
            raise ConfigError(f"league: {err}") from None
        self.desk = LeagueDesk(cfg, self.league, folder, policy.model)
        roles = ["main_exploiter"] * cfg.league.main_exploiters
        roles += ["league_exploiter"] * cfg.league.league_exploiters
        self.exploiters = [
            Exploiter(self.league, role, n, cfg, env, seed + 1 + n, policy.model)
            for n, role in enumerate(roles)
        ]

    def seat_main(self, env: Any) -> Any:
        """The main player's env: seated, with its mirror copies (``league.mirror``)."""
        return seat(env, PlayerSeating(self.league, MAIN), mirror_copies(self.cfg))

    def attach(self, learner: Any) -> None:
        """Rides in the main learner's checkpoints and runs after each of its iterations."""
        self.desk.attach(learner, league=self)

    # --- after each iteration of the main player ------------------------------------------
    def after_iter(self, train_iter: int, envstep: int, tb_logger: Any) -> None:
        """Admits the main player's snapshot when due, trains each exploiter one iteration
        (starting it over when it has won enough or played long enough), and logs
        ``league/*``."""
        self.desk.admit_main(train_iter)
        for exploiter in self.exploiters:
            exploiter.train_one()
            self._maybe_reset(exploiter, train_iter)
        self.desk.finish_iter(train_iter, envstep, tb_logger)

    def status(self) -> dict[str, Any]:
        """status.json's ``league`` section."""
        return league_status(self.league, self.desk.gap)

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
        exploiter.start_over()
        why = f"scored {score:.2f}" if won else f"played {lc.exploiter_max_iters} iterations"
        self.logger.info(f"{old} {why}; it joined the pool and starts over")

    def exploitability(self) -> float | None:
        """The main policy's exploitability on a matrix game (None on other envs)."""
        return self.desk.exploitability()

    # --- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {**self.desk.state_dict(), "exploiters": [e.state_dict() for e in self.exploiters]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("exploiters", [])
        if len(saved) != len(self.exploiters):
            raise ConfigError(
                f"the checkpoint's league has {len(saved)} exploiter(s), this run "
                f"{len(self.exploiters)}; resume with the same league.*_exploiters"
            )
        self.desk.load_state_dict(state)
        for exploiter, exploiter_state in zip(self.exploiters, saved, strict=True):
            exploiter.load_state_dict(exploiter_state)

    def close(self) -> None:
        for exploiter in self.exploiters:
            exploiter.collector.close()
