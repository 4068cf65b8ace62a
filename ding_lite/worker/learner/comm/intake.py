"""How a learner takes the rollout files a learn task names: checked, read, validated, sorted.

Nothing in a task is trusted, even from a token holder. Every named path must resolve inside
``path_data`` before any file is touched (else the whole task is refused). Each file is then
read (``weights_only``) and validated against the run's :class:`RolloutSpec`, and only then
deleted; every named file ends in exactly one outcome, which the learn info reports so the
coordinator's ledger can account for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ding_lite.data.files import read_rollout, reject_file
from ding_lite.data.spec import RolloutSpec, probe_rollout_spec, validate_rollout
from ding_lite.envs.teachers import scripted_name
from ding_lite.utils.errors import is_disk_full
from ding_lite.utils.paths import UnsafePathError, parse_rollout_path, resolve_inside
from ding_lite.utils.stop import DISK_FULL, LEARNER_FAILED

#: Outcomes of a file named in a learn task (each file gets exactly one).
LEARN_OUTCOMES = ("trained", "dropped_stale", "dropped_invalid", "dropped_rollback")


@dataclass
class Intake:
    """The files of one learn task, sorted by outcome, and the batches to train on."""

    outcome: dict[str, list[str]] = field(
        default_factory=lambda: {name: [] for name in LEARN_OUTCOMES}
    )
    batches: list[dict[str, torch.Tensor]] = field(default_factory=list)
    lags: list[int] = field(default_factory=list)
    #: ``(file, its league matches)`` of each valid file that carried some, stale ones
    #: included (the matches were played all the same), rolled-back ones not.
    matches: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        """Files dropped for any reason."""
        return sum(len(v) for k, v in self.outcome.items() if k.startswith("dropped_"))

    def training_failed(self) -> None:
        """The iteration on ``batches`` did not complete: the files it consumed are lost
        with it, as if rolled back (the learner resumes from a checkpoint)."""
        self.outcome["dropped_rollback"].extend(self.outcome["trained"])
        self.outcome["trained"] = []
        self.batches, self.lags = [], []


def task_paths(files: Any, root: str | Path, key: str = "files") -> list[tuple[str, Path]]:
    """Checks every path a task names before anything is touched.

    Args:
        files: the task's list of rollout-file metadata dicts (``{"path": ...}``) or paths.
        root: the folder they must lie in (``path_data``).
        key: the task field, for the error message.

    Returns:
        ``(path as given, resolved path)`` per distinct file, in the task's order.

    Raises:
        UnsafePathError: ``files`` is not a list, or any path is not inside ``root``.
    """
    if not isinstance(files, list):
        raise UnsafePathError(f"field '{key}' must be a list of rollout files")
    seen: set[Path] = set()
    named = []
    for item in files:
        given = item.get("path") if isinstance(item, dict) else item
        resolved = resolve_inside(given, root)
        if resolved not in seen:
            seen.add(resolved)
            named.append((str(given), resolved))
    return named


def take_rollouts(
    named: list[tuple[str, Path]],
    *,
    spec: RolloutSpec,
    version: int,
    max_lag: int,
    rejected_dir: Path,
    logger: Any,
) -> Intake:
    """Reads, validates and deletes the named files; sorts each into one outcome.

    - gone, not a regular file, unreadable or not matching ``spec``: ``dropped_invalid``
      (an existing file is moved to ``rejected_dir``, outside ``path_data``);
    - collected by a policy newer than ``version`` (rolled back): ``dropped_rollback``;
    - more than ``max_lag`` versions old: ``dropped_stale``;
    - else ``trained``: its tensors go into ``batches``.

    Never raises for a bad file.
    """
    intake = Intake()
    for given, path in named:
        content = _read_valid(given, path, spec, rejected_dir, logger)
        if content is None:
            intake.outcome["dropped_invalid"].append(given)
            continue
        _delete(path, logger)
        collected = int(content["policy_version"])
        lag = version - collected
        if lag >= 0 and content.get("league_matches") is not None:
            intake.matches.append((given, content["league_matches"]))
        if lag < 0:
            intake.outcome["dropped_rollback"].append(given)
            logger.warning(
                f"rollout {given} dropped (rollback): collected by policy v{collected}, newer "
                f"than the learner's v{version}"
            )
        elif lag > max_lag:
            intake.outcome["dropped_stale"].append(given)
            logger.warning(
                f"rollout {given} dropped (stale): policy lag {lag} > "
                f"system.max_policy_lag={max_lag}"
            )
        else:
            intake.outcome["trained"].append(given)
            intake.batches.append(content["data"])
            intake.lags.append(lag)
    return intake


def delete_files(named: list[tuple[str, Path]], logger: Any) -> list[str]:
    """Deletes the named files (already checked with :func:`task_paths`); returns them."""
    for _, path in named:
        if path.is_file():
            _delete(path, logger)
    return [given for given, _ in named]


def _read_valid(
    given: str, path: Path, spec: RolloutSpec, rejected_dir: Path, logger: Any
) -> dict[str, Any] | None:
    """The file's content when it is a valid rollout; else None (moved aside if it exists)."""
    if not path.is_file():
        logger.warning(f"rollout {given} is gone or not a file; dropped as invalid")
        return None
    try:
        return read_checked(path, spec, given=given)
    except Exception as err:  # any bad file is dropped, never fatal to the learner
        where = reject_file(path, rejected_dir)
        logger.warning(f"{one_line(err)}; moved to {where}" if where else one_line(err))
        return None


def read_checked(
    path: Path, spec: RolloutSpec, *, given: str = "", named: Path | None = None
) -> dict[str, Any]:
    """A rollout file's content, checked against ``spec`` and against what its name says.

    Args:
        path: the file to read.
        spec: what a collector of this run writes.
        given: the file as the sender named it (for messages).
        named: the name it goes by when ``path`` is a temp file (a rollout received over
            HTTP, checked before it is moved into place).

    Raises:
        ValueError: not named like a rollout file; CheckpointError: unreadable or not a
            rollout; InvalidRolloutError: not matching ``spec`` or its name.
    """
    meta = parse_rollout_path(named or path)
    if meta is None:
        raise ValueError(f"{given or path} is not named like a rollout file")
    content = read_rollout(path)
    validate_rollout(
        content, spec, meta["size"], path=given or path, expected_version=meta["policy_version"]
    )
    return content


def _delete(path: Path, logger: Any) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as err:
        logger.warning(f"could not delete consumed rollout {path}: {err}")


def log_lags(learner: Any, info: dict[str, Any]) -> None:
    """Logs the policy lag of the rollouts an iteration trained on (tensorboard)."""
    if learner.tb_logger is not None and "policy_lag" in info:
        tb, step = learner.tb_logger, learner.envstep
        tb.add_scalar("charts/policy_lag", info["policy_lag"], step)
        tb.add_scalar("charts/policy_lag_max", info["policy_lag_max"], step)


def one_line(err: BaseException) -> str:
    """``"ExcType: first line of the message"``."""
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


def failure_of(err: BaseException) -> tuple[str, str]:
    """``(stop_reason, one-line error)`` of the exception that ended a training thread."""
    return (DISK_FULL if is_disk_full(err) else LEARNER_FAILED), one_line(err)


def batch_id_of(value: Any) -> str | None:
    """A learn task's batch id (None: not given)."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        raise ValueError(f"field 'batch' must be a string of 1-64 characters, got {value!r:.40}")
    return value


def run_rollout_spec(cfg: Any, probe: Any, policy: Any) -> RolloutSpec:
    """What every rollout file of the run must hold (``probe``: an env built to look at)."""
    return probe_rollout_spec(
        probe,
        policy.collect_mode,
        policy.device,
        cfg.policy.learn.bptt_horizon,
        n_steps=cfg.policy.collect.n_steps,
        episodes=policy.adv_estimator.episodic,
        next_obs=cfg.policy.learn.recompute_values,
        teacher=scripted_name(cfg.policy.learn.kickstart.teacher) is not None,
    )
