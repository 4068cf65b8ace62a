"""TrainingThread: a BaseLearner training in a thread, one batch in, one publication out.

The comm learner's task handlers hand a batch over with :meth:`TrainingThread.train` and get
back what the ``after_iter`` publish step produced. Batches and answers carry an id, so an
answer that arrives after its task gave up is never taken for the next one. An exception
that ends the thread is kept (``error``), never re-raised into a task.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from ding_lite.worker.learner.base_learner import BaseLearner
from ding_lite.worker.learner.learner_hook import CallbackHook

__all__ = ["CallbackHook", "TrainingThread"]


class TrainingThread:
    """Runs ``learner.train`` on the batches :meth:`train` hands over, in a thread.

    The learner's ``after_iter`` hook (the comm learner's ``send_learn_info``) hands each
    iteration's answer back with :meth:`answer`.

    Args:
        learner: the BaseLearner (its ``before_run`` hooks already called).
        logger: where the thread reports how it ended.
        fetch: what the loop calls for its next batch (None: stop); default
            :meth:`next_batch` (a comm learner passes its ``get_data``, which calls it).
        step: what trains one iteration on a batch; default ``learner.train`` (rank 0 of a
            data-parallel learner passes its leader's ``train``, which involves every rank).
    """

    def __init__(
        self,
        learner: BaseLearner,
        logger: Any,
        fetch: Callable[[], dict[str, torch.Tensor] | None] | None = None,
        step: Callable[[dict[str, torch.Tensor]], Any] | None = None,
    ) -> None:
        self.learner = learner
        self._fetch = fetch or self.next_batch
        self._step = step or learner.train
        self._logger = logger
        self._data: queue.Queue = queue.Queue(maxsize=1)
        self._answers: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._batch_id = 0  # last id handed out
        self._training_id = 0  # id of the batch being trained on
        #: The exception that ended the thread (None while it did not fail).
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="learner-train", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def ended(self) -> bool:
        """The thread ended on its own (failed, stop requested, iterations done)."""
        return self._thread.ident is not None and not self.alive and not self._stop.is_set()

    def stop(self, timeout: float) -> None:
        """Ends the loop (the ``after_run`` hooks run); waits at most ``timeout`` seconds."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._logger.warning(f"learner thread still busy after {timeout:g} s")

    def train(self, batch: list[dict[str, torch.Tensor]], timeout: float) -> dict[str, Any] | None:
        """Trains one iteration on ``batch`` (the rollouts of one learn task).

        Returns:
            The :meth:`answer` given for it, or None when the thread died or stopped first.

        Raises:
            TimeoutError: no answer within ``timeout`` seconds (the thread is still busy).
        """
        self._batch_id += 1
        batch_id = self._batch_id
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive:
                return None
            try:
                self._data.put((batch_id, batch), timeout=0.1)
                break
            except queue.Full:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"training thread took no batch in {timeout:g} s") from None
        while True:
            try:
                got_id, answer = self._answers.get(timeout=0.1)
            except queue.Empty:
                if not self.alive and self._answers.empty():
                    return None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no learn info within {timeout:g} s") from None
                continue
            if got_id == batch_id:  # an older batch's late answer is dropped
                return answer

    def answer(self, result: dict[str, Any]) -> None:
        """Hands the answer for the batch being trained on back to :meth:`train`."""
        self._answers.put((self._training_id, result))

    def next_batch(self) -> dict[str, torch.Tensor] | None:
        """The next batch handed over (None once stopped): the BaseLearner's ``get_data``."""
        while not self._stop.is_set():
            try:
                self._training_id, batch = self._data.get(timeout=0.1)
                return batch
            except queue.Empty:
                continue
        return None

    def _run(self) -> None:
        learner = self.learner
        try:
            with learner.auto_checkpoint():
                for _ in range(learner.cfg.max_iterations):
                    batch = self._fetch()
                    if batch is None:
                        break
                    self._step(batch)
                    if learner.stop_reason is not None:
                        self._logger.warning(f"learner stopped: {learner.stop_reason}")
                        break
                learner.call_hook("after_run")
        except BaseException as err:  # reported by every later task (stop_reason, error)
            self._logger.exception("learner thread failed")
            self.error = err
        finally:
            learner.close()
