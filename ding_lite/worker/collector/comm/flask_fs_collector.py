"""FlaskFileSystemCollector: a collector worker driven by coordinator tasks.

On ``collector_start_task`` it builds its env (on its device), the policy and an
:class:`AsyncCollector` that keeps stepping; ``collector_data_task`` hands over the metadata
of the files written since the last call, ``collector_policy_sync_task`` swaps in new weights
between rollouts, ``collector_close_task`` stops. A collector with ``evaluate=True`` also
evaluates every ``evaluator.eval_freq``-th policy version it receives. A policy path a task
names must lie inside ``path_policy``; nothing outside it is ever read.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from ding_lite.config.config import compile_sent_config
from ding_lite.data.files import remove_temp_files
from ding_lite.envs.buffered import build_collector_env
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.utils.device import resolve_device
from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.log import get_logger
from ding_lite.utils.paths import is_worker_id, resolve_inside
from ding_lite.utils.threads import set_worker_threads
from ding_lite.worker.collector.comm.async_collector import AsyncCollector
from ding_lite.worker.collector.comm.sender import DataPlaneSender
from ding_lite.worker.collector.eval_video import EvalVideo
from ding_lite.worker.collector.evaluator import Evaluator
from ding_lite.worker.collector.league_pool import seat_for_league
from ding_lite.worker.collector.serial_collector import SerialCollector

EVAL_SEED_OFFSET = 1_000_003
# Seconds without a heartbeat answer before collecting pauses: its rollouts could not be
# reported, its policy could not be updated, and the run may have ended meanwhile.
OUT_OF_REACH_S = 5.0
TaskHandler = Any


class FlaskFileSystemCollector:
    """A collector worker: tasks in, rollout files out.

    Args:
        worker_id: this collector's id (its files go to ``<path_data>/<worker_id>/``).
        device: overrides the config's device for this worker ("cpu", "cuda", ...).
        slave_factory: builds the transport from ``(handlers)``; None serves nothing.
    """

    def __init__(
        self, *, worker_id: str = "collector0", device: str | None = None, slave_factory=None
    ) -> None:
        self.worker_id = worker_id
        self._device_override = device
        #: The transport serving this worker's tasks (None: handlers are called directly).
        self.slave = slave_factory(self.handlers) if slave_factory is not None else None
        if self.slave is not None:
            self.slave.on_undelivered = self.undelivered
        self._logger = get_logger(f"collector.{worker_id}")
        self._async: AsyncCollector | None = None
        self._sender: DataPlaneSender | None = None  # the http data plane's (None: files)
        self._evaluated_bucket = 0
        self._evaluated_initial = False  # evaluator.before_train done
        #: Set once the coordinator closed this worker (its process may exit).
        self.closed = threading.Event()
        self._recent_returns: deque[float] = deque(maxlen=100)
        self._started_with: dict[str, Any] | None = None  # the start task that started it
        self._start_answer: dict[str, Any] = {}

    @property
    def handlers(self) -> dict[str, TaskHandler]:
        return {
            "collector_start_task": self.start_task,
            "collector_data_task": self.data_task,
            "collector_policy_sync_task": self.policy_sync_task,
            "collector_close_task": self.close_task,
        }

    def start(self) -> None:
        if self.slave is not None:
            self.slave.start()

    def close(self) -> None:
        if self._async is not None:
            self._async.stop()
        if self._sender is not None:
            self._sender.stop()
        if self.slave is not None:
            self.slave.stop()

    def start_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Builds env, policy and loop; loads the given policy version; starts collecting.

        ``data``: ``{"config": dict, "seed": int, "evaluate": bool, "policy_path": str,
        "policy_version": int}``. A start that fails leaves nothing started, so it may be
        sent again.

        Raises:
            ConfigError: a config this worker cannot run (e.g. ``device: cuda`` without a
                GPU, an id that cannot name a data folder); the task fails as
                "ConfigError: ...", which the coordinator does not retry.
            UnsafePathError: ``policy_path`` is not inside ``path_policy`` (nothing loaded).
        """
        if self._async is not None:
            if data == self._started_with:  # a restarted coordinator that did not book it
                self._logger.info("asked to start again, as started: collecting on")
                return dict(self._start_answer)
            if data.get("take_back") is True and data.get("config") == self._run_config():
                return self._taken_back(data)
            raise DingLiteError("collector already started")
        if not is_worker_id(self.worker_id):
            raise ConfigError(
                f"collector id {self.worker_id!r} cannot name a data folder; use letters,"
                " digits, '.', '_' and '-' (at most 64, not '.' or '..')"
            )
        cfg = compile_sent_config(data["config"], self._device_override)
        set_worker_threads(cfg.system.torch_threads)
        self.cfg = cfg
        self._path_policy = Path(cfg.system.path_policy or Path(cfg.exp_dir) / "policy")
        policy_path = None
        if data.get("policy_path"):
            policy_path = resolve_inside(data["policy_path"], self._path_policy)
            policy_version = _version(data.get("policy_version"))
        device = resolve_device(cfg.device)
        seed = int(data["seed"])
        env = build_collector_env(cfg, cfg.env.num_envs, device, seed)
        policy = create_policy(
            cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space, device=device
        )
        env, seating = seat_for_league(cfg, env, policy.model, seed)
        collector = SerialCollector.from_config(env, policy, cfg, seed)
        self._device, self._policy = device, policy
        path_data = Path(cfg.system.path_data or Path(cfg.exp_dir) / "data")
        self._sender = self._data_plane_sender(cfg, data, path_data)
        if self._sender is not None:  # written here, sent, then the learner's
            path_data = self._sender.outgoing
        # Unfinished writes of an earlier process with this id (no one else writes here).
        for path in remove_temp_files(path_data / self.worker_id):
            self._logger.warning(f"removed {path}: an unfinished write of an earlier run")
        self._async = AsyncCollector(
            collector,
            policy,
            name=self.worker_id,
            path_data=path_data,
            max_pending_files=cfg.system.max_pending_files,
            # evaluator.before_train: the policy it starts with is evaluated too.
            report_first=bool(cfg.evaluator.before_train),
            sync=cfg.system.sync_collect,
            out_of_reach=self._out_of_reach,
            deliver=self._sender.submit if self._sender is not None else None,
            league=seating,
        )
        try:
            if data.get("evaluate"):
                self._enable_evaluation()
            if policy_path is not None:
                self._load_policy(policy_path, policy_version)
        except BaseException:
            self._async = None  # not started: the coordinator may send the start again
            if self._sender is not None:
                self._sender.stop()
            raise
        if self._sender is not None:
            self._sender.start()
        self._async.start()
        self._logger.info(f"collecting: env {cfg.env.name} x{cfg.env.num_envs} on {device}")
        self._started_with = data
        self._start_answer = {"device": str(device), "num_envs": cfg.env.num_envs}
        return dict(self._start_answer)

    def _run_config(self) -> Any:
        return (self._started_with or {}).get("config")

    def _taken_back(self, data: dict[str, Any]) -> dict[str, Any]:
        """A new coordinator of the run this collector runs (one that could not take the
        run back from its predecessor's state) asks it to start: it collects on, with the
        policy the start names, and says where it stands."""
        loop = self._require_async()
        if self._sender is not None:
            self._sender.point_at(_source(data))
        if data.get("policy_path"):
            path = resolve_inside(data["policy_path"], self._path_policy)
            version = _version(data.get("policy_version"))
            self._load_policy(path, version, rollback=version < loop.policy_version)
        self._logger.warning("taken back by a new coordinator of the run: collecting on")
        return {
            **self._start_answer,
            "taken_back": True,
            "evaluates": hasattr(self, "_evaluator"),
            "envstep": loop.collector.envstep,  # its own count, since it started
        }

    def data_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Metadata of the rollout files written since the last call, plus episode stats."""
        if self._sender is not None and self._sender.error:
            raise DingLiteError(self._sender.error)
        out = self._require_async().drain()
        self._recent_returns.extend(out["episode_returns"])
        return out

    def _out_of_reach(self) -> str:
        """Why collecting should wait for the coordinator ("" while it answers): no
        heartbeat answered for :data:`OUT_OF_REACH_S` (a cut link, a coordinator stopped)."""
        if self.slave is None:
            return ""
        silent = time.monotonic() - self.slave.last_contact
        if silent < OUT_OF_REACH_S:
            return ""
        return f"the coordinator has not answered for {silent:.0f} s"

    def undelivered(self, name: str, result: dict[str, Any]) -> None:
        """A data task's answer never reached the coordinator (it was restarting): what it
        carried is reported again with the next data task. Files it names are on disk, so
        the coordinator's scan would find them too; episodes and evaluations would be lost."""
        if name == "collector_data_task" and self._async is not None:
            self._async.give_back(result)
            self._logger.warning(
                f"the coordinator did not take {len(result.get('files') or [])} file(s) and "
                f"{len(result.get('evals') or [])} evaluation(s); they go with the next data task"
            )

    def policy_sync_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data``: ``{"path", "version", "published_at", "evaluate", "rollback"}``; the
        policy is used from the next rollout on. ``evaluate`` makes this collector the
        evaluating one (when the previous one was lost); ``rollback`` (a learner restarted
        from an older checkpoint) makes an older version replace the current one."""
        self._require_async()
        path = resolve_inside(data.get("path"), self._path_policy)  # before anything is read
        version = _version(data.get("version"))
        published_at = data.get("published_at")
        if not isinstance(published_at, int | float) or isinstance(published_at, bool):
            published_at = None
        if data.get("evaluate") and not hasattr(self, "_evaluator"):
            self._enable_evaluation()
        if self._sender is not None:
            self._sender.point_at(_source(data))
        self._load_policy(path, version, published_at, rollback=data.get("rollback") is True)
        return {"accepted_version": version}

    def _load_policy(
        self, path: Path, version: int, published_at: float | None = None, rollback: bool = False
    ) -> None:
        """Hands policy ``version`` to the loop: read from ``path`` (files plane), or fetched
        from the learner, read and deleted (http plane)."""
        loop = self._require_async()
        if self._sender is None:
            loop.sync_policy(str(path), version, published_at, rollback=rollback)
            return
        if not loop.wants(version, rollback):
            return
        fetched = self._sender.fetch_policy(version)
        try:
            loop.sync_policy(str(fetched), version, published_at, rollback=rollback)
        finally:
            fetched.unlink(missing_ok=True)

    def _data_plane_sender(
        self, cfg: Any, data: dict[str, Any], path_data: Path
    ) -> DataPlaneSender | None:
        """The http data plane's sender, pointed at the learner (None: the files plane)."""
        if cfg.system.data_plane != "http":
            return None
        if self.slave is None:
            raise ConfigError("system.data_plane http needs the collector's own server")
        sender = DataPlaneSender(
            self.worker_id,
            self.slave.files.peer,
            on_stored=lambda meta: self._require_async().report_file(meta),
            own_dir=Path(cfg.exp_dir) / "outbox" / self.worker_id,
            path_data=path_data,
            timeout=cfg.system.http_timeout,
            logger=self._logger,
        )
        sender.point_at(_source(data))
        return sender

    def close_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Stops collecting; returns what was not yet handed over.

        With ``data["final_eval"]`` an evaluating collector also evaluates the newest policy
        it received, so a run always ends with an evaluation of its final policy.
        """
        self.closed.set()
        if self._async is None:
            return {"files": [], "evals": []}
        self._async.stop()
        self._async.apply_pending_policy()
        if self._sender is not None:
            # Reported all the same: the ledger books them as dropped at the run's end.
            for meta in self._sender.stop():
                self._async.report_file(meta)
        out = self._async.drain()
        self._logger.info(f"closed; wrote {self._async.files_written} rollout file(s) in all")
        if data.get("final_eval") and hasattr(self, "_evaluator"):
            version = self._async.policy_version
            if not any(e["policy_version"] == version for e in out["evals"]):
                out["evals"].append(self._evaluate(version))
        return out

    def _enable_evaluation(self) -> None:
        """Builds the eval env and evaluates policy versions from now on."""
        cfg = self.cfg
        eval_seed = cfg.seed + EVAL_SEED_OFFSET
        eval_env = build_env(
            cfg, cfg.evaluator.n_episodes, self._device, eval_seed, evaluation=True
        )
        self._evaluator = Evaluator(
            eval_env,
            self._policy.eval_mode,
            stop_value=cfg.evaluator.stop_value,
            seed=eval_seed,
            video=EvalVideo.from_config(cfg, cfg.exp_dir),  # evaluator.video_freq
        )
        self._require_async().set_on_policy(self._maybe_evaluate)
        self._logger.info("evaluating policy versions from now on")

    def _maybe_evaluate(self, version: int) -> dict[str, Any] | None:
        """Evaluates when ``version`` crosses a multiple of ``eval_freq`` (versions may be
        skipped when several arrive during one rollout)."""
        ev = self.cfg.evaluator
        if version == 0 and ev.before_train and not self._evaluated_initial:
            self._evaluated_initial = True  # the initial policy, whatever min_train_return
            return self._evaluate(version)
        if not ev.eval_freq or version // ev.eval_freq <= self._evaluated_bucket:
            return None
        recent = list(self._require_async().collector.recent_returns)[-20:]
        if ev.min_train_return is not None and (
            not recent or sum(recent) / len(recent) < ev.min_train_return
        ):
            return None
        self._evaluated_bucket = version // ev.eval_freq
        return self._evaluate(version)

    def _evaluate(self, version: int) -> dict[str, Any]:
        start = time.perf_counter()
        result = self._evaluator.eval(version=version)
        if result.video is not None:
            self._logger.info(f"eval video of policy v{version}: {result.video.path}")
        return {
            "seconds": time.perf_counter() - start,  # the coordinator logs perf/eval_s
            "policy_version": version,
            "return_mean": result.return_mean,
            "return_std": result.return_std,
            "n_episodes": result.n_episodes,  # each agent's episode: copies x agents
            "agents": int(getattr(self._evaluator.env, "num_agents", 1)),
            "solved": result.solved,
            "win_rate": result.win_rate,
        }

    def _require_async(self) -> AsyncCollector:
        if self._async is None:
            raise DingLiteError("collector not started: send collector_start_task first")
        return self._async


def _source(data: dict[str, Any]) -> str:
    """The learner's ``host:port`` a task names (the http data plane's ``source``)."""
    source = data.get("source")
    if not isinstance(source, str) or not source:
        raise ValueError("field 'source' (the learner's host:port) is missing")
    return source


def _version(value: Any) -> int:
    """A policy version from a task (a non-negative int)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a policy version must be a non-negative int, got {value!r:.40}")
    return value
