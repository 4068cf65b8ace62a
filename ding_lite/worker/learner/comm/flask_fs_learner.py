"""FlaskFileSystemLearner: a BaseLearner fed by rollout files, driven by coordinator tasks.

The coordinator names the rollout files to train on in ``learner_learn_task``; this worker
loads them (``weights_only``), deletes them, hands the batch to the ``BaseLearner`` thread
through a queue and answers with the iteration's learn info once the new policy version is
published as a file. Every wait is timed.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from pathlib import Path
from typing import Any

import torch

from ding_lite.config.config import compile_config
from ding_lite.data.files import read_rollout, write_policy
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.utils.device import resolve_device
from ding_lite.utils.errors import CheckpointError, DingLiteError
from ding_lite.utils.log import build_tb_logger, get_logger
from ding_lite.utils.rng import set_seed
from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.comm.base_comm_learner import BaseCommLearner, TaskHandler
from ding_lite.worker.learner.learner_hook import LearnerHook


class _CallbackHook(LearnerHook):
    """Calls ``callback(engine)``: how the comm learner hands its publish step to the learner."""

    default_priority = 90  # after logging and checkpoints

    def __init__(self, name: str, priority: float | None = None, *, position: str, callback):
        super().__init__(name, priority, position=position)
        self._callback = callback

    def __call__(self, engine: BaseLearner) -> None:
        self._callback(engine)


class FlaskFileSystemLearner(BaseCommLearner):
    """A learner worker: tasks in, rollout files read and deleted, policy files out.

    Args:
        worker_id: this learner's id.
        device: overrides the config's device for this worker ("cpu", "cuda", ...).
        slave_factory: builds the transport from ``(handlers)``; None serves nothing (the
            handlers are called directly, as tests do).
    """

    def __init__(
        self,
        *,
        worker_id: str = "learner0",
        device: str | None = None,
        slave_factory: Any = None,
    ) -> None:
        self.worker_id = worker_id
        self._device_override = device
        #: The transport serving this worker's tasks (None: handlers are called directly).
        self.slave = slave_factory(self.handlers) if slave_factory is not None else None
        self._logger = get_logger(f"learner.{worker_id}")
        self._learner: BaseLearner | None = None
        self._thread: threading.Thread | None = None
        self._data_queue: queue.Queue = queue.Queue(maxsize=1)
        self._info_queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        #: Set once the coordinator closed this worker (its process may exit).
        self.closed = threading.Event()

    @property
    def handlers(self) -> dict[str, TaskHandler]:
        return {
            "learner_start_task": self.start_task,
            "learner_get_data_task": self.get_data_task,
            "learner_learn_task": self.learn_task,
            "learner_close_task": self.close_task,
        }

    def start(self) -> None:
        if self.slave is not None:
            self.slave.start()

    def close(self) -> None:
        self._stop_learner(timeout=10.0)
        if self.slave is not None:
            self.slave.stop()

    # --- tasks ---------------------------------------------------------------------------
    def start_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Builds the policy and the BaseLearner from the run's config and starts training.

        ``data``: ``{"config": resolved config dict}``. Returns the first published policy.
        """
        if self._learner is not None:
            raise DingLiteError("learner already started")
        cfg = compile_config(data["config"])
        if self._device_override:
            cfg.device = self._device_override
        self.cfg = cfg
        set_seed(cfg.seed)
        self.device = resolve_device(cfg.device)
        probe = build_env(cfg, 1, "cpu", cfg.seed)
        # One iteration trains on a rollout of every collector: C collectors of N envs learn
        # like a serial run with C * N envs.
        batch = cfg.policy.collect.n_steps * cfg.env.num_envs * cfg.system.collectors
        total_iters = math.ceil(cfg.max_env_step / batch) if cfg.max_env_step else None
        self.policy = create_policy(
            cfg.policy,
            obs_shape=probe.obs_shape,
            action_space=probe.action_space,
            device=self.device,
            total_iters=total_iters or cfg.max_train_iter,
        )
        self.batch_size = batch
        exp_dir = Path(cfg.exp_dir)
        self.path_policy = Path(cfg.system.path_policy or exp_dir / "policy")
        tb_logger = build_tb_logger(exp_dir / "tb" / self.worker_id)
        learner = BaseLearner(
            cfg.learner,
            self.policy,
            tb_logger,
            cfg.exp_name,
            self.worker_id,
            exp_dir=exp_dir,
            get_data=self._get_data,
        )
        learner.register_hook(
            _CallbackHook("publish", position="after_iter", callback=self._publish)
        )
        learner.call_hook("before_run")  # a resume loads its checkpoint here, before v0 goes out
        self._learner = learner
        path = write_policy(
            self.path_policy,
            learner.last_iter,
            self.policy.model.state_dict(),
            keep=cfg.system.keep_policies,
        )
        self._thread = threading.Thread(target=self._run, name="learner-train", daemon=True)
        self._thread.start()
        self._logger.info(
            f"training {cfg.exp_name} on {self.device}, {batch} samples per iteration"
        )
        return {
            "policy_path": str(path),
            "policy_version": learner.last_iter,
            "envstep": learner.envstep,
            "batch_size": batch,
            "published_at": time.time(),
        }

    def get_data_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """The learner's demand: samples per iteration, and where it stands."""
        learner = self._require_learner()
        return {
            "batch_size": self.batch_size,
            "iteration": learner.last_iter,
            "policy_version": learner.last_iter,
        }

    def learn_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Trains one iteration on the named rollout files and publishes the new policy.

        ``data``: ``{"files": [metadata...], "envstep": int}``.
        Files are deleted once read; rollouts more than ``max_policy_lag`` versions old are
        dropped (counted).
        """
        learner = self._require_learner()
        version = learner.last_iter
        max_lag = self.cfg.system.max_policy_lag
        batches, lags, dropped = [], [], 0
        for meta in data["files"]:
            try:
                content = read_rollout(meta["path"])
            except CheckpointError as err:
                # Files are written atomically, so this is a file that vanished or was
                # damaged outside ding_lite: skip it (counted), keep training on the rest.
                self._logger.warning(f"skipping rollout: {err}")
                Path(meta["path"]).unlink(missing_ok=True)
                dropped += 1
                continue
            Path(meta["path"]).unlink(missing_ok=True)
            lag = version - int(content["policy_version"])
            if lag > max_lag:
                dropped += 1
                continue
            batches.append(content["data"])
            lags.append(lag)
        learner.envstep = int(data.get("envstep", learner.envstep))
        if not batches:
            return self._info(trained=False, dropped=dropped)
        batch = {k: torch.cat([b[k] for b in batches]).to(self.device) for k in batches[0]}
        timeout = self.cfg.system.task_timeout
        self._data_queue.put(batch, timeout=timeout)
        info = self._wait_info(timeout)
        info.update(dropped=dropped, policy_lag=sum(lags) / len(lags))
        if learner.tb_logger is not None:
            learner.tb_logger.add_scalar("charts/policy_lag", info["policy_lag"], learner.envstep)
        return info

    def close_task(self, data: dict[str, Any]) -> dict[str, Any]:
        """Ends the run: deletes the unused rollout files named in ``data["discard"]``; the
        learner saves its checkpoint (after_run hooks)."""
        for meta in data.get("discard", []):
            Path(meta["path"]).unlink(missing_ok=True)
        self._stop_learner(timeout=self.cfg.system.task_timeout if self._learner else 5.0)
        learner = self._learner
        self.closed.set()
        return {"iteration": learner.last_iter if learner else 0}

    # --- the learner thread -------------------------------------------------------------
    def _run(self) -> None:
        learner = self._learner
        try:
            with learner.auto_checkpoint():
                for _ in range(learner.cfg.max_iterations):
                    batch = self._get_data()
                    if batch is None:
                        break
                    learner.train(batch)
                learner.call_hook("after_run")
        except BaseException as err:  # reported by the next learn task
            self._logger.exception("learner thread failed")
            self._error = err
            self._info_queue.put(err)
        finally:
            learner.close()

    def _get_data(self) -> dict[str, torch.Tensor] | None:
        while not self._stop.is_set():
            try:
                return self._data_queue.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def _publish(self, learner: BaseLearner) -> None:
        """after_iter: publish the new policy version, then report the learn info."""
        path = write_policy(
            self.path_policy,
            learner.last_iter,
            self.policy.model.state_dict(),
            keep=self.cfg.system.keep_policies,
        )
        self._info_queue.put(self._info(trained=True, dropped=0, policy_path=str(path)))

    def _info(self, *, trained: bool, dropped: int, policy_path: str = "") -> dict[str, Any]:
        """Learn info; ``done`` says the run's env-step or iteration limit is reached."""
        learner = self._learner
        cfg = self.cfg
        done = None
        if cfg.max_env_step is not None and learner.envstep >= cfg.max_env_step:
            done = "max_env_step"
        elif cfg.max_train_iter is not None and learner.last_iter >= cfg.max_train_iter:
            done = "max_train_iter"
        return {
            "trained": trained,
            "iteration": learner.last_iter,
            "policy_version": learner.last_iter,
            "policy_path": policy_path,
            "published_at": time.time(),
            "done": done is not None,
            "done_reason": done,
            "dropped": dropped,
            # JSON has no NaN: a non-finite scalar (e.g. explained variance of a constant
            # target) goes out as null.
            "scalars": {
                k: (float(v) if math.isfinite(v) else None) for k, v in learner.learn_info.items()
            }
            if trained
            else {},
        }

    def _wait_info(self, timeout: float) -> dict[str, Any]:
        try:
            item = self._info_queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no learn info within {timeout:g} s") from None
        if isinstance(item, BaseException):
            raise RuntimeError(f"learner failed: {item!r}") from item
        return item

    def _require_learner(self) -> BaseLearner:
        if self._learner is None:
            raise DingLiteError("learner not started: send learner_start_task first")
        if self._error is not None:
            raise RuntimeError(f"learner failed: {self._error!r}")
        return self._learner

    def _stop_learner(self, timeout: float) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._logger.warning(f"learner thread still busy after {timeout:g} s")
