"""The ranks of a data-parallel learner: rank 0 leads, the others follow in lockstep.

Rank 0 is the learner the coordinator talks to (a :class:`FlaskFileSystemLearner`); it reads
and checks each iteration's rollout files, then hands the batch to the other ranks through
torch.distributed, so they need neither the coordinator nor the data folder, only the
checkpoint folder (every rank loads the checkpoint rank 0 resumes from). Commands go out as
JSON over the group (:class:`RankLeader`): ``start`` (the run's config and the checkpoint),
``train`` (the envstep; the batch follows as tensors), ``stop`` (the run ended), ``exit``,
and ``idle`` once a second while nothing else goes out, so a follower waiting for the next
command knows rank 0 is alive. Every collective is bounded by the group's timeout; a rank
that loses its group (a peer died or stalled) stops with :data:`GROUP_LOST_EXIT`, and the
launcher (or torchrun's agent) restarts the whole group from the latest checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ding_lite.config.config import compile_sent_config
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.policy.build import seed_updates
from ding_lite.utils import distributed
from ding_lite.utils.device import resolve_device
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.utils.rng import set_seed
from ding_lite.utils.threads import set_worker_threads
from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.saved_policy import attach_teacher

#: Exit code of a learner rank whose group broke (a peer died, or a collective timed out).
GROUP_LOST_EXIT = 3
IDLE_PERIOD_S = 1.0  # rank 0 tells waiting followers it is alive this often
CLOSE_WAIT_S = 2.0  # how long closing waits for a command still holding the group
# Rank 0 leaves after the ranks on other machines (RankLeader.close): at most this long for
# them to leave the group, then this long for their processes to end and their torchrun
# agents to reach the exit barrier.
FOLLOWERS_EXIT_WAIT_S = 10.0
AGENT_GRACE_S = 2.0


def build_policy(cfg: Any, device_override: str | None = None) -> tuple[Any, Any, int]:
    """What rank 0 and every follower build alike for a run: ``(probe env, policy, samples
    per iteration)``, after seeding with the run's seed (samples are agent steps: env steps
    times the env's agents per copy).

    One iteration trains on a rollout of every collector: C collectors of N envs learn like
    a serial run with C * N envs. With several ranks on GPUs, rank r takes GPU r (modulo
    the GPUs present).

    Raises:
        ConfigError: a device this machine lacks.
    """
    device = resolve_device(device_override or cfg.device)
    rank, ranks = distributed.world()
    if device.type == "cuda" and ranks > 1:
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    set_seed(cfg.seed)
    # One reset group of copies (one copy without groups): what the shapes come from.
    probe = build_env(cfg, cfg.env.reset_group_size, "cpu", cfg.seed)
    env_steps = cfg.policy.collect.n_steps * cfg.env.num_envs * cfg.system.collectors
    # Samples: agent steps (a league's collectors learn from agent 0 alone: docs/league.rst).
    batch = env_steps * (1 if cfg.league.enabled else probe.num_agents)
    if min(cfg.policy.learn.batch_size, batch) % ranks:
        raise ConfigError(
            f"policy.learn.batch_size={cfg.policy.learn.batch_size} does not split into "
            f"{ranks} equal parts, one per learner rank"
        )
    total_iters = math.ceil(cfg.max_env_step / env_steps) if cfg.max_env_step else None
    policy = create_policy(
        cfg.policy,
        obs_shape=probe.obs_shape,
        action_space=probe.action_space,
        device=device,
        total_iters=total_iters or cfg.max_train_iter,
    )
    seed_updates(policy, cfg.seed)  # the stream a serial run's update draws from
    attach_teacher(policy, cfg, probe.obs_shape, probe.action_space)
    return probe, policy, batch


def exit_group_lost(err: BaseException) -> None:
    """Ends this process at once with :data:`GROUP_LOST_EXIT`: the way out of a group that
    broke under rank 0, as a killed learner leaves (the coordinator and the launcher know
    what to do with that), without waiting on the broken collectives in other threads."""
    get_logger("learner").error(
        f"learner group lost ({err}); exiting for a restart of the whole group"
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(GROUP_LOST_EXIT)


class RankLeader:
    """Rank 0's side: sends the commands, and the batch of every iteration.

    One command at a time (with what follows it: a ``train`` command holds the group until
    the iteration's update is done), from any thread.

    Args:
        on_lost: called with the ``GroupLost`` error when a collective fails (then the error
            is raised, if ``on_lost`` returns).
    """

    def __init__(self, on_lost: Callable[[BaseException], None] = exit_group_lost) -> None:
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._last_sent = time.monotonic()
        self._closed = threading.Event()
        self._lost = False
        self._heartbeat = threading.Thread(target=self._idle_loop, name="rank-idle", daemon=True)
        self._heartbeat.start()

    def start_run(self, config: dict[str, Any], checkpoint: str | None, model: Any) -> None:
        """The followers build the run (loading ``checkpoint``), then take rank 0's weights."""
        with self._lock, self._guard():
            self._send("start", config=config, checkpoint=checkpoint)
            distributed.broadcast_module(model)

    def train(self, learner: BaseLearner, batch: list[dict[str, torch.Tensor]]) -> None:
        """One iteration on every rank: the command, the rollouts one by one, then the
        update itself (each rank runs the same advantage step on the same rollouts)."""
        with self._lock, self._guard():
            self._send("train", envstep=learner.envstep, rollouts=len(batch))
            for rollout in batch:
                distributed.broadcast_tensors(rollout)
            learner.train(batch)

    def end_run(self) -> None:
        with self._lock, self._guard():
            self._send("stop")

    def close(self, timeout: float = CLOSE_WAIT_S) -> None:
        """Tells the followers to exit and leaves the group (nothing if it is lost).

        A command still holding the group after ``timeout`` seconds (a collective with a
        peer that died without the backend noticing) counts as a lost group: ``on_lost`` is
        called, rather than waiting for the group's own timeout.
        """
        self._closed.set()
        if not self._lock.acquire(timeout=timeout):
            self._lost = True
            self._on_lost(
                distributed.GroupLost(f"a collective still holds the group after {timeout:g} s")
            )
            return
        try:
            if self._lost:
                return
            try:
                self._send("exit")
            except distributed.GroupLost:
                return  # the followers are gone already
            self._outlast_other_machines()
            distributed.finalize()
        finally:
            self._lock.release()

    @staticmethod
    def _outlast_other_machines() -> None:
        """Leaves after the ranks on other machines (``AGENT_GRACE_S`` after the last), so
        that their torchrun agents reach torchrun's exit barrier before node 0's, which
        serves that barrier's store. When node 0's agent arrives first, it waits on the
        store, is released by the last agent's arrival, and shuts its store down at once,
        which can be before that last agent has read its own release: a traceback in the
        other machine's torchrun output (exit code 0 all the same; pytorch/pytorch#69520,
        seen in CI on the two-host tests of tests/multihost). An agent that arrives first
        is released by a message already on its way when node 0's agent goes on."""
        elsewhere = distributed.ranks_elsewhere()
        if elsewhere:
            distributed.wait_until_left(elsewhere, FOLLOWERS_EXIT_WAIT_S)
            time.sleep(AGENT_GRACE_S)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except distributed.GroupLost as err:
            self._lost = True
            self._on_lost(err)
            raise

    def _send(self, op: str, **fields: Any) -> None:
        distributed.broadcast_json({"op": op, **fields})
        self._last_sent = time.monotonic()

    def _idle_loop(self) -> None:
        while not self._closed.wait(IDLE_PERIOD_S / 4):
            if self._lost or time.monotonic() - self._last_sent < IDLE_PERIOD_S:
                continue
            if self._lock.acquire(blocking=False):
                try:
                    with self._guard():
                        self._send("idle")
                except distributed.GroupLost:
                    return
                finally:
                    self._lock.release()


class RankFollower:
    """A rank other than 0: builds each run rank 0 starts and trains in lockstep with it.

    Its learner runs the run's hooks like rank 0's (logging; checkpoints are written by
    rank 0 only) but no ``before_run`` checkpoint hook: it loads the checkpoint rank 0 names.
    """

    def __init__(self, device_override: str | None = None) -> None:
        self._device_override = device_override
        self._learner: BaseLearner | None = None
        self._logger = get_logger(f"learner.rank{distributed.world()[0]}")

    def run(self) -> int:
        """Follows rank 0 until it says exit (0); raises ``GroupLost`` if the group breaks."""
        while True:
            command = distributed.broadcast_json()
            op = command.get("op")
            if op == "train":
                rollouts = int(command["rollouts"])
                batch = [distributed.broadcast_tensors(None) for _ in range(rollouts)]
                assert self._learner is not None  # rank 0 sends "start" first
                self._learner.train(batch, envstep=int(command["envstep"]))
            elif op == "start":
                self._start(command["config"], command.get("checkpoint"))
            elif op == "stop":
                self._end_run()
            elif op == "exit":
                self._end_run()
                distributed.finalize()
                return 0

    def _start(self, config: dict[str, Any], checkpoint: str | None) -> None:
        self._end_run()
        cfg = compile_sent_config(config)
        set_worker_threads(cfg.system.torch_threads)
        _, policy, _ = build_policy(cfg, self._device_override)
        learner_cfg = dict(cfg.learner, load_path="")
        learner_cfg["hook"] = {
            k: v for k, v in cfg.learner.hook.items() if k != "load_ckpt_before_run"
        }
        learner = BaseLearner(
            learner_cfg, policy, None, cfg.exp_name, self._logger.name, exp_dir=cfg.exp_dir
        )
        if checkpoint:
            learner.load_checkpoint(checkpoint)
        distributed.broadcast_module(policy.model)
        learner.call_hook("before_run")
        self._learner = learner
        self._logger.info(
            f"rank {distributed.world()[0]} of {distributed.world()[1]}: training "
            f"{cfg.exp_name}" + (f" from {checkpoint}" if checkpoint else "")
        )

    def _end_run(self) -> None:
        if self._learner is not None:
            self._learner.call_hook("after_run")
            self._learner.close()
            self._learner = None
