"""BaseLearner: runs policy updates and the hooks around them.

One iteration is one ``train(data)`` call: the policy's full update over one batch, wrapped by
the ``before_iter`` / ``after_iter`` hooks. ``start()`` is the loop the parallel pipeline runs,
pulling batches from a dataloader; the serial pipeline calls ``train`` itself.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ding_lite.data.dataloader import AsyncDataLoader
from ding_lite.policy.base import LearnMode
from ding_lite.utils import distributed
from ding_lite.utils.counter import CountVar
from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.utils.file_io import atomic_torch_save
from ding_lite.utils.log import get_logger
from ding_lite.utils.rng import get_rng_state, set_rng_state
from ding_lite.utils.stop import DIVERGED
from ding_lite.utils.timer import PhaseTimer
from ding_lite.worker.learner import checkpoint as ckpt_files
from ding_lite.worker.learner.checkpoint import ckpt_name, latest_checkpoint, read_checkpoint
from ding_lite.worker.learner.learner_config import (
    check_policy_device,
    learner_config,
    learner_device,
    to_device,
)
from ding_lite.worker.learner.learner_hook import (
    LearnerHook,
    build_hooks,
    hooks_with_load_path,
    sort_hooks,
)

SAVE_HOOK = "save_ckpt_after_run"  # DI-engine: save_checkpoint() runs the hook of this name

__all__ = ["BaseLearner", "latest_checkpoint", "read_checkpoint"]


class BaseLearner:
    """Trains a policy; hooks do logging, checkpoints and whatever a user registers.

    Args:
        cfg: the ``learner`` config section (missing keys take their defaults).
        policy: the policy to train; may be set later through the ``policy`` property.
        tb_logger: a tensorboardX ``SummaryWriter`` for the scalars, or None.
        exp_name: run name; checkpoints go to ``<exp_dir>/ckpt``.
        instance_name: this learner's name in logs.
        exp_dir: experiment dir (default ``./<exp_name>``).
        get_data: callable returning the next batch (or None to stop), for ``start()``.
    """

    def __init__(
        self,
        cfg: Any = None,
        policy: Any = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "learner",
        *,
        exp_dir: str | Path | None = None,
        get_data: Callable[[], Any] | None = None,
    ) -> None:
        self._cfg = learner_config(cfg)
        distributed.require(self._cfg.use_distributed)  # DI-engine's dist_init
        self._device = learner_device(self._cfg, distributed.world()[0])  # learner.use_cuda
        self._policy: Any = None  # a Policy, or its learn_mode
        if policy is not None:
            self.policy = policy
        self._tb_logger = tb_logger
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._exp_dir = Path(exp_dir if exp_dir is not None else exp_name)
        self._get_data = get_data
        self._logger = get_logger(instance_name)
        # Iterations done (the policy version); ``last_iter`` catches up after the after_iter hooks.
        self._iters_done = 0
        self._last_iter = CountVar(0)
        #: The checkpoint file the last ``load_checkpoint`` restored (None before any).
        self.loaded_checkpoint: Path | None = None
        self._envstep = 0
        self._learn_info: dict[str, float] = {}
        self._priority_info: dict[str, Any] | None = None
        # Bounded, so a run that never shows its logs does not grow without limit.
        self._log_buffer: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=10_000))
        self._tick_time = 0.0
        self._timer = PhaseTimer()
        self._states: dict[str, Any] = {}
        self._dataloader: Any = None
        self._stop_reason: str | None = None
        self._tmp_checked = False
        self._saving_via_hook = False  # save_checkpoint() inside the save hook it called
        self._last_saved: Path | None = None
        self._hook_list: list[LearnerHook] = []
        self._hooks = sort_hooks([])
        for hook in build_hooks(hooks_with_load_path(self._cfg)):
            try:
                self.register_hook(hook)
            except ValueError as err:
                raise ConfigError(f"learner.hook: {err}") from None

    # --- hooks ---------------------------------------------------------------------------
    def register_hook(self, hook: LearnerHook) -> None:
        """Adds ``hook`` at its position (ascending priority, ties in registration order).

        Raises:
            ValueError: another hook already has the same name.
        """
        if any(h.name == hook.name for h in self._hook_list):
            raise ValueError(f"a hook named '{hook.name}' is already registered")
        self._hook_list.append(hook)
        self._hooks = sort_hooks(self._hook_list)

    def call_hook(self, position: str) -> None:
        """Runs every hook registered at ``position``."""
        if position not in self._hooks:
            raise ValueError(f"unknown hook position '{position}'")
        for hook in self._hooks[position]:
            hook(self)

    @property
    def hooks(self) -> dict[str, list[LearnerHook]]:
        """Hooks by position, in the order they run."""
        return {pos: list(hooks) for pos, hooks in self._hooks.items()}

    def request_stop(self, reason: str) -> None:
        """Asks the loop driving this learner to end the run after the current iteration.

        ``start()`` and the serial pipeline check it after every iteration; a hook calls it
        for early stopping.
        """
        self._stop_reason = reason
        self._logger.info(f"stop requested: {reason}")

    @property
    def stop_reason(self) -> str | None:
        """Why a stop was requested (None: it was not)."""
        return self._stop_reason

    def register_state(self, name: str, obj: Any) -> None:
        """Makes ``obj``'s ``state_dict()`` ride in checkpoints (e.g. the collector's envs)."""
        self._states[name] = obj

    # --- training ------------------------------------------------------------------------
    def train(self, data: Any, envstep: int = -1) -> dict[str, float]:
        """Runs one iteration on ``data``; returns the learn info.

        Args:
            data: the batch the policy's ``learn_mode.forward`` takes.
            envstep: env steps collected so far (-1 keeps the last known value).
        """
        if self._policy is None:
            raise RuntimeError("BaseLearner.train needs a policy; set learner.policy first")
        if envstep >= 0:
            self._envstep = envstep
        if self._device is not None:  # DI-engine's learner puts each batch on its device
            data = to_device(data, self._device)
        start = time.perf_counter()
        self.call_hook("before_iter")
        learn = self._policy if isinstance(self._policy, LearnMode) else self._policy.learn_mode
        prepare = getattr(learn, "prepare", None)  # DI-engine's: none
        with self._timer("advantage"):
            data = data if prepare is None else prepare(data)
        with self._timer("update"):
            info: dict[str, Any] = learn.forward(data)  # DI-engine's may hold lists
        self._iters_done += 1
        # DI-engine's {"replay_buffer_idx", "priority"}: lists, not scalars to log.
        self._learn_info = {k: v for k, v in info.items() if k != "priority_info"}
        self._priority_info = info.get("priority_info", self._priority_info)
        if info.get("diverged"):  # too many non-finite steps in a row: more cannot help
            self._logger.info(
                f"iteration {self._iters_done}: the policy skipped too many optimizer steps in "
                "a row for a non-finite loss or gradient"
            )
            self.request_stop(DIVERGED)
        self.call_hook("after_iter")
        self._last_iter.update(self._iters_done)
        self._tick_time = time.perf_counter() - start
        self._log_buffer["train_time"].append(self._tick_time)
        return self._learn_info

    def start(self) -> None:
        """Trains ``max_iterations`` iterations on batches from the dataloader.

        Stops early when the data source returns None. Saves a checkpoint and re-raises on
        SIGINT/SIGTERM or an exception, after stopping the dataloader's thread (a thread
        still inside torch when the interpreter exits can abort the process).
        """
        if self._dataloader is None:
            self.setup_dataloader()
        try:
            with self.auto_checkpoint():
                self.call_hook("before_run")
                for _ in range(self._cfg.max_iterations):
                    data = self._next_data()
                    if data is None:
                        break
                    self.train(data)
                    if self._stop_reason is not None:
                        break
                self.call_hook("after_run")
        except BaseException:
            if self._dataloader is not None:
                self._dataloader.close()
                self._dataloader = None
            raise

    def setup_dataloader(self) -> None:
        """Prepares the loader ``start()`` pulls from (needs ``get_data``)."""
        if self._get_data is None:
            raise RuntimeError("BaseLearner.start needs get_data= to read batches from")
        self._dataloader = AsyncDataLoader(self._get_data)

    def _next_data(self) -> Any:
        start = time.perf_counter()
        data = self._dataloader.next() if self._dataloader is not None else None
        self._log_buffer["data_time"].append(time.perf_counter() - start)
        return data

    def auto_checkpoint(self) -> contextlib.AbstractContextManager[None]:
        """Saves a checkpoint when the block is left by an exception, SIGINT or SIGTERM
        (see :func:`~ding_lite.worker.learner.checkpoint.checkpoint_on_exit`)."""
        return ckpt_files.checkpoint_on_exit(self)

    def close(self) -> None:
        """Stops the dataloader and flushes tensorboard."""
        if self._dataloader is not None:
            self._dataloader.close()
            self._dataloader = None
        if self._tb_logger is not None:
            self._tb_logger.flush()

    # --- checkpoints ---------------------------------------------------------------------
    @property
    def ckpt_dir(self) -> Path:
        return self._exp_dir / "ckpt"

    def state_dict(self) -> dict[str, Any]:
        """Everything a checkpoint holds: only tensors, numbers, strings, lists and dicts."""
        hooks = {h.name: h.state_dict() for h in self._hook_list if hasattr(h, "state_dict")}
        return {
            "format": ckpt_files.CKPT_FORMAT,
            "train_iter": self._iters_done,
            "envstep": self._envstep,
            "policy": self._policy.state_dict(),
            "rng": get_rng_state(),
            "hooks": hooks,
            "extra": {name: obj.state_dict() for name, obj in self._states.items()},
        }

    def save_checkpoint(self, name: str | None = None) -> Path | None:
        """Writes a checkpoint atomically; named ones are kept, iteration ones rotated.

        Without a name, a registered ``save_ckpt_after_run`` hook does the saving (DI-engine's
        contract: a hook of that name replaces how checkpoints are saved); the built-in one
        calls back here and writes ``ckpt_iter<N>.pt``.

        Args:
            name: file stem; default ``ckpt_iter<N>`` (only the last ``keep_ckpts`` stay).

        Returns:
            The file written (None when a replacement hook wrote none).
        """
        hook = next((h for h in self._hooks["after_run"] if h.name == SAVE_HOOK), None)
        if name is None and hook is not None and not self._saving_via_hook:
            self._saving_via_hook, self._last_saved = True, None
            try:
                hook(self)
            finally:
                self._saving_via_hook = False
            return self._last_saved
        if self.rank != 0:
            return self.ckpt_dir
        path = self.ckpt_dir / (f"{name}.pt" if name else ckpt_name(self._iters_done))
        if not self._tmp_checked:  # a killed earlier run may have left a half-written file
            ckpt_files.remove_stale_tmp(self.ckpt_dir)
            self._tmp_checked = True
        atomic_torch_save(self.state_dict(), path)
        self._last_saved = path
        if name is None:
            ckpt_files.rotate_checkpoints(self.ckpt_dir, self._cfg.keep_ckpts)
        self._logger.info(f"saved checkpoint {path}")
        return path

    def load_checkpoint(self, path: str | Path) -> None:
        """Restores a checkpoint file, or the newest one in a folder.

        Raises:
            CheckpointError: missing, corrupt, or not a ding_lite checkpoint.
        """
        if Path(path).is_dir():
            ckpt_files.remove_stale_tmp(path)
        path, state = read_checkpoint(path)
        try:
            self._policy.load_state_dict(state["policy"])
        except (RuntimeError, KeyError, ValueError) as err:
            first = str(err).strip().splitlines()[0]
            raise CheckpointError(f"checkpoint {path} does not fit this model: {first}") from None
        # The parts that can refuse the file go first: a refusal leaves the counters at
        # zero, so a run that fails here is one that never trained (its dir is removed).
        ckpt_files.load_extra_states(self._states, state["extra"], path)
        self._iters_done = int(state["train_iter"])
        self._last_iter.update(self._iters_done)
        self._envstep = int(state["envstep"])
        set_rng_state(state["rng"])
        for hook in self._hook_list:
            if hook.name in state["hooks"] and hasattr(hook, "load_state_dict"):
                hook.load_state_dict(state["hooks"][hook.name])
        self.loaded_checkpoint = path
        self._logger.info(f"loaded checkpoint {path} (iteration {self._iters_done})")

    # --- properties ----------------------------------------------------------------------
    @property
    def policy(self) -> Any:
        return self._policy

    @policy.setter
    def policy(self, policy: Any) -> None:
        """A policy, or its ``learn_mode`` (DI-engine's idiom), trained through that mode.

        Raises:
            ConfigError: ``learner.use_cuda`` picked another device than the policy's.
        """
        check_policy_device(self._device, policy)
        self._policy = policy

    @property
    def device(self) -> torch.device:
        """Where the learner trains: the device ``learner.use_cuda`` (DI-engine's key) picked,
        else the policy's (cpu without either)."""
        return self._device or torch.device(getattr(self._policy, "device", None) or "cpu")

    @property
    def learn_info(self) -> dict[str, float]:
        """Scalars of the last iteration (losses, KL, grad norm, learning rate, ...)."""
        return self._learn_info

    @property
    def priority_info(self) -> dict[str, Any] | None:
        """Each segment's index in the last batch and its priority, DI-engine's way:
        ``{"replay_buffer_idx": [...], "priority": [...]}``; None if sampling is uniform."""
        return self._priority_info

    @property
    def last_iter(self) -> CountVar:
        """The iteration counter, DI-engine's way: a :class:`CountVar` (``.val``, ``.add()``,
        compares and formats like an int) bumped after the ``after_iter`` hooks, so those
        hooks see the iterations done before this one."""
        return self._last_iter

    @property
    def train_iter(self) -> int:
        """Iterations done so far, the current one included inside its ``after_iter`` hooks
        (also the policy version and what checkpoints record)."""
        return self._iters_done

    @property
    def envstep(self) -> int:
        """Env steps collected so far (set by ``train(data, envstep)`` or by a comm learner)."""
        return self._envstep

    @envstep.setter
    def envstep(self, envstep: int) -> None:
        self._envstep = envstep

    name = property(lambda self: self._instance_name, doc="This learner's name in logs.")
    exp_name = property(lambda self: self._exp_name, doc="The run's name.")

    rank = property(lambda self: distributed.world()[0], doc="Rank in its group (0: none).")
    world_size = property(lambda self: distributed.world()[1], doc="Ranks in the group (1: none).")

    tick_time = property(lambda self: self._tick_time, doc="Seconds of the last iteration.")
    timer = property(lambda self: self._timer, doc="The per-phase :class:`PhaseTimer`.")
    log_buffer = property(lambda self: self._log_buffer, doc="Recent values by name.")
    logger = property(lambda self: self._logger, doc="This learner's text logger.")

    @property
    def tb_logger(self) -> Any:
        return self._tb_logger

    @tb_logger.setter
    def tb_logger(self, tb_logger: Any) -> None:
        self._tb_logger = tb_logger

    @property
    def load_path(self) -> str:
        """The checkpoint loaded before the run (``learner.load_path`` or the
        ``load_ckpt_before_run`` shorthand; "" if none)."""
        return hooks_with_load_path(self._cfg).get("load_ckpt_before_run", "") or ""

    cfg = property(lambda self: self._cfg, doc="The learner section, defaults merged.")
