"""FlaskFileSystemLearner: a BaseLearner fed by rollout files, driven by coordinator tasks.

The coordinator names the rollout files to train on in ``learner_learn_task``; this worker
checks that every path lies inside ``path_data``, reads each file (``weights_only``),
validates it against the run's rollout spec, deletes it, hands the batch to the
``BaseLearner`` thread through a queue and answers with the iteration's learn info once the
new policy version is published as a file. Every named file is reported in exactly one
outcome (``trained``, ``dropped_stale``, ``dropped_invalid``, ``dropped_rollback``). A dead
training thread or a stop the learner asked for (e.g. divergence) is reported in every
answer (``stop_reason``, ``error``) instead of failing tasks. Every wait is timed.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from pathlib import Path
from typing import Any

import torch

from ding_lite.config.config import compile_sent_config
from ding_lite.data.files import remove_newer_policies, remove_temp_files, write_policy
from ding_lite.utils import distributed
from ding_lite.utils.log import build_tb_logger, get_logger
from ding_lite.utils.paths import UnsafePathError, scan_rollouts
from ding_lite.utils.stop import DISK_FULL, DIVERGED, LEARNER_FAILED, STOP_REASONS, limit_reached
from ding_lite.utils.threads import set_worker_threads
from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.comm.base_comm_learner import BaseCommLearner
from ding_lite.worker.learner.comm.best import BestPolicyWriter, check_best
from ding_lite.worker.learner.comm.home import HomeLink
from ding_lite.worker.learner.comm.inbox import Inbox
from ding_lite.worker.learner.comm.intake import (
    Intake,
    batch_id_of,
    delete_files,
    failure_of,
    log_lags,
    run_rollout_spec,
    take_rollouts,
    task_paths,
)
from ding_lite.worker.learner.comm.ranks import RankLeader, build_policy
from ding_lite.worker.learner.comm.repeats import SAME, AnswerBook, start_again
from ding_lite.worker.learner.comm.training_thread import CallbackHook, TrainingThread
from ding_lite.worker.learner.league_desk import LeagueDesk
from ding_lite.worker.learner.learner_hook import LearnerHook, LoadCkptHook

# Stops the learner asks for that are failures of the run (reported as its stop_reason).
_FAILURE_STOPS = (DIVERGED, DISK_FULL, LEARNER_FAILED)


class FlaskFileSystemLearner(BaseCommLearner):
    """A learner worker: tasks in, rollout files read and deleted, policy files out.

    In a torch.distributed group (``--learners N``, torchrun) this is rank 0: it leads the
    other ranks (:mod:`~ding_lite.worker.learner.comm.ranks`), which train in lockstep.

    Args:
        worker_id: this learner's id.
        device: overrides the config's device for this worker ("cpu", "cuda", ...).
        slave_factory: builds the transport from the handlers (None: called directly).
    """

    def __init__(
        self,
        cfg: Any = None,
        *,
        worker_id: str = "learner0",
        device: str | None = None,
        slave_factory: Any = None,
    ) -> None:
        super().__init__(cfg)
        self.worker_id = worker_id
        self._device_override = device
        self.slave = slave_factory(self.handlers) if slave_factory else None  #: (see above)
        self._logger = get_logger(f"learner.{worker_id}")
        self._learner: BaseLearner | None = None
        self._thread: TrainingThread | None = None
        self._best: BestPolicyWriter | None = None  # ckpt/best.pt, from start_task on
        self._home: HomeLink | None = None  # http plane: checkpoints to and from home
        self._published: Path | None = None  # the policy file send_policy wrote last
        self._league: LeagueDesk | None = None  # league.enabled: the main player's side
        self._learn_lock = threading.Lock()  # learn tasks run one at a time
        self._answers = AnswerBook()  # a learn task asked again gets the same answer
        self._started_with: dict[str, Any] | None = None  # the start task of this run
        self._resumed_from: int | None = None
        self.closed = threading.Event()  #: set once the coordinator closed this worker
        #: Rank 0's link to the other ranks of a data-parallel learner (None: one rank).
        self.leader = RankLeader() if distributed.world()[1] > 1 else None
        self.inbox = Inbox(self.slave.files if self.slave else None, self._logger)  #: http plane

    def start(self) -> None:
        super().start()
        if self.slave is not None:
            self.slave.start()

    def close(self) -> None:
        super().close()
        self._stop_learner(timeout=10.0)
        if self.slave is not None:
            self.slave.stop()
        if self.leader is not None:  # the group's exit last: it waits for other machines' ranks
            self.leader.close()

    # --- DI-engine's callables (the training thread calls them) --------------------------
    def get_data(self, batch_size: int) -> dict[str, torch.Tensor] | None:
        """The next batch a learn task hands over (None once the learner is stopped)."""
        batch = self._thread.next_batch() if self._thread is not None else None
        if batch is None and self.leader is not None:
            self.leader.end_run()
        return batch

    def send_policy(self, state_dict: dict[str, Any]) -> None:
        """Publishes the weights as policy version ``train_iter`` (a file in path_policy)."""
        self._published = write_policy(
            self.path_policy,
            self._require_learner().train_iter,
            state_dict,
            keep=self.cfg.system.keep_policies,
            league_sheet=self._league.sheet() if self._league else None,
        )

    def send_learn_info(self, learn_info: dict[str, Any]) -> None:
        """Answers the learn task whose batch was just trained on."""
        # JSON has no NaN: a non-finite scalar (e.g. explained variance) goes out as null.
        scalars = {k: (float(v) if math.isfinite(v) else None) for k, v in learn_info.items()}
        if self._thread is not None:
            self._thread.answer({"policy_path": str(self._published), "scalars": scalars})

    @property
    def hooks4call(self) -> list[LearnerHook]:
        """After every iteration (last, priority 90): publish the policy, then report."""
        publish = CallbackHook("publish", position="after_iter", callback=self._after_iter)
        return [publish, *(self._home.hooks() if self._home else [])]

    def _after_iter(self, learner: BaseLearner) -> None:
        start = time.perf_counter()
        self.send_policy(self.policy.model.state_dict())
        if learner.tb_logger is not None:  # after log_reduce's perf/ phases of this iteration
            seconds = time.perf_counter() - start
            learner.tb_logger.add_scalar("perf/publish_s", seconds, learner.envstep)
        self.send_learn_info(learner.learn_info)

    # --- tasks ---------------------------------------------------------------------------
    def start_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Builds the policy and the BaseLearner from the run's config and starts training.

        ``data``: ``{"config": resolved config dict, "take_back": bool}``. A learner that
        resumes from a checkpoint (``learner.hook.load_ckpt_before_run``) first removes the
        published policy versions newer than the checkpoint. Returns the first published
        policy and ``resumed_from`` (the checkpoint's iteration, or None for a fresh start).

        A learner training this run answers where it stands (``running`` true) to the same
        start again or to a ``take_back`` of the run (:mod:`.repeats`).

        Raises:
            ConfigError: e.g. a device this machine lacks (the task fails as "ConfigError:
                ...", which the coordinator does not retry).
        """
        if self._learner is not None and not self.closed.is_set():
            if start_again(self._started_with, data) == SAME:
                self._logger.info("asked to start again, as started: where training stands")
            else:
                self._logger.warning(
                    "taken back by the coordinator, which had lost contact with this learner: "
                    f"training goes on from iteration {self._require_learner().train_iter}"
                )
            return {**self._start_answer(), "running": True}
        self._learner, self._thread, self._best = None, None, None  # resident: a new run
        self.closed.clear()
        cfg = compile_sent_config(data["config"], self._device_override)
        set_worker_threads(cfg.system.torch_threads)
        self.cfg = cfg
        probe, self.policy, batch = build_policy(cfg)
        self.device = self.policy.device
        self.spec = run_rollout_spec(cfg, probe, self.policy)
        self.batch_size = batch
        exp_dir = Path(cfg.exp_dir)
        self.path_policy = Path(cfg.system.path_policy or exp_dir / "policy")
        self.path_data = Path(cfg.system.path_data or exp_dir / "data")
        self.rejected_dir = exp_dir / "rejected"
        self._home = HomeLink.for_run(cfg, self.slave, data.get("fetch"), self._logger)
        tb_logger = build_tb_logger(exp_dir / "tb" / self.worker_id)
        learner = self._create_learner(
            {
                "learner_cfg": cfg.learner,
                "policy": self.policy,
                "batch_size": batch,
                "exp_name": cfg.exp_name,
                "exp_dir": exp_dir,
                "instance_name": self.worker_id,
                "tb_logger": tb_logger,
            }
        )
        self._league = LeagueDesk.for_learner(cfg, exp_dir, self.policy, learner, probe.num_agents)
        learner.call_hook("before_run")  # a resume loads its checkpoint here, before v0 goes out
        resumed = any(isinstance(h, LoadCkptHook) for h in learner.hooks["before_run"])
        # Versions newer than the one about to go out were published after the checkpoint
        # (or by an older run in this folder): collectors must not pick them up, and the
        # learner is about to publish those versions again.
        for path in remove_temp_files(self.path_policy):  # this learner is its only writer
            self._logger.warning(f"removed {path}: an unfinished write of an earlier run")
        for path in remove_newer_policies(self.path_policy, learner.train_iter):
            self._logger.warning(
                f"removed policy {path}: newer than iteration {learner.train_iter}"
            )
        self._learner = learner
        self.inbox.open(cfg, self.path_data, self.path_policy, self.spec)
        self._best = BestPolicyWriter(
            learner.ckpt_dir, self.path_policy, self.policy.arch, self._logger
        )
        self.send_policy(self.policy.model.state_dict())
        if self.leader is not None:  # the other ranks build the run and take these weights
            loaded = learner.loaded_checkpoint
            self.leader.start_run(
                data["config"], str(loaded) if loaded else None, self.policy.model
            )
        self._thread = TrainingThread(
            learner,
            self._logger,
            fetch=functools.partial(self.get_data, batch),
            step=functools.partial(self.leader.train, learner) if self.leader else None,
        )
        self._thread.start()
        self._logger.info(
            f"training {cfg.exp_name} on {self.device}, {batch} samples per iteration"
            + (f", resumed from iteration {learner.train_iter}" if resumed else "")
        )
        self._started_with = data
        self._resumed_from = learner.train_iter if resumed else None
        return self._start_answer()

    def _start_answer(self) -> dict[str, Any]:
        """The answer to a start task: the policy published last and where training is."""
        learner = self._require_learner()
        return {
            "policy_path": str(self._published),
            "policy_version": learner.train_iter,
            "envstep": learner.envstep,
            "batch_size": self.batch_size,
            "published_at": time.time(),
            "resumed_from": self._resumed_from,
            "checkpoint": loaded.name if (loaded := learner.loaded_checkpoint) else None,
            "ranks": self.world_size,
            "running": False,
        }

    def get_data_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """The learner's demand (samples per iteration, where it stands), its state
        (``stop_reason``, ``error``) and the rollouts it holds (``received``: http plane)."""
        learner = self._require_learner()
        stop_reason, error = self._state()
        return {
            "batch_size": self.batch_size,
            "iteration": learner.train_iter,
            "policy_version": learner.train_iter,
            "stop_reason": stop_reason,
            "error": error,
            "received": self.inbox.holding(),
        }

    def learn_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Trains one iteration on the named rollout files and publishes the new policy.

        ``data``: ``{"files": [metadata or path...], "envstep": int, "batch": id}``; a
        batch id answered before gets that answer again (nothing is read or trained).
        Every path must lie inside ``path_data``, else the task fails with
        ``UnsafePathError`` and no file is touched. A learner that stopped (``stop_reason``
        set) touches no file either; the coordinator gets the files back as not consumed.

        Returns:
            The learn info (see ``_info``), with every named file in exactly one of
            ``trained``, ``dropped_stale``, ``dropped_invalid``, ``dropped_rollback``.
        """
        learner = self._require_learner()
        assert self._best is not None and self._thread is not None  # started with the learner
        best = check_best(data)
        batch_id = batch_id_of(data.get("batch"))
        named = task_paths(data.get("files", []), self.path_data)
        envstep = data.get("envstep", learner.envstep)
        if isinstance(envstep, bool) or not isinstance(envstep, int) or envstep < 0:
            raise ValueError(f"field 'envstep' must be a non-negative int, got {envstep!r:.40}")
        with self._learn_lock:
            if (answered := self._answers.get(batch_id)) is not None:
                self._logger.info(f"batch {batch_id} was trained on already; answering again")
                return answered
            self._best.take(best, learner.envstep)
            if self._state()[0] is not None:
                return self._info(Intake())
            intake = take_rollouts(
                named,
                spec=self.spec,
                version=learner.train_iter,
                max_lag=self.cfg.system.max_policy_lag,
                rejected_dir=self.rejected_dir,
                logger=self._logger,
            )
            if self._league is not None:
                self._league.book_all(intake.matches)  # the matches the files carried
            learner.envstep = envstep
            if not intake.batches:
                return self._info(intake)
            # One rollout per file: each is its env copies' [T, B] steps, so the learner's
            # advantage step takes them one by one (BaseLearner.train takes a list).
            batch = [{k: v.to(self.device) for k, v in b.items()} for b in intake.batches]
            published = self._thread.train(batch, self.cfg.system.task_timeout)
            if published is None:  # the training thread died or stopped on this batch
                intake.training_failed()
                return self._info(intake)
            info = self._info(intake, **published)
            self._answers.put(batch_id, info)
        log_lags(learner, info)
        return info

    def close_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Ends the run: deletes the unused rollout files named in ``data["discard"]`` (all
        checked inside ``path_data`` first, else ``UnsafePathError`` and nothing deleted);
        the learner saves its checkpoint (after_run hooks).

        Returns: ``{"iteration", "dropped_run_end": [paths], "left_in_path_data",
        "received": [held unnamed, deleted: http plane], "stop_reason", "error", "best"}``.
        """
        discard = data.get("discard", [])
        best = check_best(data)
        if discard and self._learner is None:
            raise UnsafePathError("learner not started: it cannot check the discard paths")
        named = task_paths(discard, self.path_data, "discard") if discard else []
        dropped = delete_files(named, self._logger)
        held = self.inbox.close()  # the http plane: what arrived after the coordinator looked
        self._stop_learner(timeout=self.cfg.system.task_timeout if self._learner else 5.0)
        learner = self._learner
        if learner is not None and self._best is not None:  # the final eval may be the best
            self._best.take(best, learner.envstep)
            if self._home is not None:
                self._home.send_new()
        self.closed.set()
        stop_reason, error = self._state() if learner else (None, "")
        return {
            "iteration": learner.train_iter if learner else 0,
            "dropped_run_end": dropped,
            "left_in_path_data": len(scan_rollouts(self.path_data)) if learner else 0,
            "received": held,
            "stop_reason": stop_reason,
            "error": error,
            "best": self._best.report() if self._best else None,
        }

    # --- helpers -----------------------------------------------------------------------
    def _state(self) -> tuple[str | None, str]:
        """``(stop_reason, error)``: why this learner cannot train any more (None, "")."""
        thread = self._thread
        if thread is not None and thread.error is not None:
            return failure_of(thread.error)
        requested = self._learner.stop_reason if self._learner is not None else None
        if requested in _FAILURE_STOPS:
            return requested, f"learner stopped: {requested}"
        if requested is None and thread is not None and thread.ended:
            return LEARNER_FAILED, "training thread ended (learner.max_iterations reached)"
        return None, ""

    def _info(
        self, intake: Intake, *, policy_path: str = "", scalars: dict | None = None
    ) -> dict[str, Any]:
        """The learn info.

        ``trained`` lists the files trained on (empty: no iteration ran); ``done`` says the
        run's env-step or iteration limit is reached, or the learner asked to stop
        (``done_reason`` "diverged"); ``stop_reason``/``error`` say why it cannot go on.
        """
        learner = self._require_learner()
        done = limit_reached(self.cfg, learner.envstep, learner.train_iter)
        if done is None and learner.stop_reason in STOP_REASONS:
            done = learner.stop_reason
        stop_reason, error = self._state()
        info = {
            "iteration": learner.train_iter,
            "policy_version": learner.train_iter,
            "policy_path": policy_path,
            "published_at": time.time(),
            "done": done is not None or learner.stop_reason is not None,
            "done_reason": done,
            **intake.outcome,
            "dropped": intake.dropped,
            "stop_reason": stop_reason,
            "error": error,
            "scalars": scalars or {},
            "best": self._best.report() if self._best else None,
        }
        if intake.lags:
            info["policy_lag"] = sum(intake.lags) / len(intake.lags)
            info["policy_lag_max"] = max(intake.lags)
        return info

    def _stop_learner(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.stop(timeout)
