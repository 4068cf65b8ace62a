"""``ckpt/best.pt`` in the parallel pipeline: the policy of the best evaluation so far.

Collectors evaluate policy versions and the coordinator books the results; when one beats
the best so far it names that version and its mean in the next ``learner_learn_task`` (or
the close task), field ``best``. The learner then copies that version's published policy
file, if it still holds it, into ``ckpt/best.pt`` (written atomically, with the model's
``arch`` so ``ding_lite.load_policy`` can rebuild it). It never reads a path from the task:
the version picks a file in its own policy folder.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from ding_lite.data.files import policy_file, read_policy
from ding_lite.utils.errors import CheckpointError, DiskFullError
from ding_lite.utils.file_io import atomic_torch_save
from ding_lite.worker.learner.checkpoint import BEST_CKPT, CKPT_FORMAT, BestEval


def check_best(data: dict[str, Any]) -> tuple[int, float] | None:
    """The task's ``best`` field as ``(policy_version, return_mean)``, or None.

    Raises:
        ValueError: a malformed field (the task fails and nothing is written).
    """
    best = data.get("best")
    if best is None:
        return None
    version = best.get("policy_version") if isinstance(best, dict) else None
    value = best.get("return_mean") if isinstance(best, dict) else None
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError("field 'best' must be {policy_version: int >= 0, return_mean: number}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("field 'best.return_mean' must be a finite number")
    return version, float(value)


class BestPolicyWriter:
    """Writes ``ckpt/best.pt`` from published policy files.

    Args:
        ckpt_dir: the run's checkpoint folder.
        path_policy: the folder this learner publishes policy versions into.
        arch: the model's description (``PPOPolicy.arch``).
        logger: where a version no longer held, or a failed write, is reported.
    """

    def __init__(
        self, ckpt_dir: Path, path_policy: Path, arch: dict[str, Any], logger: logging.Logger
    ) -> None:
        self.best = BestEval(ckpt_dir)  # a resumed run keeps the best.pt it has
        self.path_policy = path_policy
        self.arch = arch
        self.logger = logger

    def take(self, best: tuple[int, float] | None, envstep: int) -> None:
        """Writes best.pt when ``best`` beats what it holds (a checked ``best`` field)."""
        if best is None or not self.best.beats(best[1]):
            return
        version, value = best
        try:
            _, model = read_policy(policy_file(self.path_policy, version))
        except CheckpointError:
            self.logger.warning(
                f"best evaluation {value:.2f} is of policy v{version}, no longer kept: "
                f"{BEST_CKPT} not updated"
            )
            return
        state = {
            "format": CKPT_FORMAT,
            "train_iter": version,
            "envstep": envstep,
            "policy": {"arch": self.arch, "model": model},
            "extra": {"best_eval": {"return_mean": value, "train_iter": version}},
        }
        try:
            atomic_torch_save(state, self.best.path)
        except (DiskFullError, OSError) as err:
            self.logger.error(f"could not write {self.best.path}: {err}")
            return
        self.best.improves(value, version)
        self.logger.info(f"saved {self.best.path}: policy v{version}, eval return {value:.2f}")

    def report(self) -> dict[str, Any] | None:
        """What best.pt holds: ``{"policy_version", "return_mean"}``, or None (no file)."""
        if self.best.return_mean is None or not self.best.path.is_file():
            return None
        return {"policy_version": self.best.train_iter or 0, "return_mean": self.best.return_mean}
