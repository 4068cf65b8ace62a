"""Optuna's side of a tuning study: the import, the storage a URL names, samplers, pruners,
and creating or joining a study.

Storage URLs:

- ``sqlite:///PATH`` and every other SQLAlchemy URL Optuna's ``RDBStorage`` takes
  (``postgresql://...``, ``mysql+pymysql://...``). SQLite connections wait up to
  :data:`SQLITE_TIMEOUT_S` for a lock, so several processes share one file without
  "database is locked" errors.
- ``journal:PATH``: Optuna's ``JournalStorage`` on the append-only file ``PATH``, locked with
  a lock file beside it; it works on a filesystem several hosts mount (NFS).
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import DingLiteError

JOURNAL_PREFIX = "journal:"
SQLITE_TIMEOUT_S = 120.0  # how long a SQLite connection waits for another's lock
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "hyperband", "none")
TPE_STARTUP_TRIALS = 8  # random trials before TPE models the results
PRUNE_STARTUP_TRIALS = 4  # trials that finish before the median pruner prunes any
ATTR_SETUP = "ding_lite"  # the study's user attribute that records what it tunes


def import_optuna() -> Any:
    """Imports Optuna, its experimental-feature warnings silenced.

    Raises:
        DingLiteError: Optuna is not installed (one line: how to install it).
    """
    try:
        optuna = importlib.import_module("optuna")
    except ImportError:
        raise DingLiteError("ding-lite tune needs Optuna: pip install 'ding-lite[tune]'") from None
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def default_storage(study_dir: Path) -> str:
    """The storage of a study given no ``--storage``: a SQLite file in its folder."""
    return f"sqlite:///{(study_dir / 'study.db').resolve()}"


def open_storage(url: str) -> Any:
    """The Optuna storage ``url`` names (see the module docstring).

    Raises:
        DingLiteError: an empty journal path, a URL SQLAlchemy cannot parse, a database
            driver that is not installed, or a database that cannot be reached.
    """
    optuna = import_optuna()
    if url.startswith(JOURNAL_PREFIX):
        path = url[len(JOURNAL_PREFIX) :]
        if not path:
            raise DingLiteError(f"--storage {url}: give a file, journal:PATH")
        from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        # The open lock (O_EXCL on a lock file) is the one that holds on NFS.
        backend = JournalFileBackend(path, lock_obj=JournalFileOpenLock(path))
        return optuna.storages.JournalStorage(backend)
    if "://" not in url:
        raise DingLiteError(
            f"--storage {url!r} is not a storage URL; use sqlite:///PATH, journal:PATH or "
            "a database URL (postgresql://USER@HOST/DB)"
        )
    engine_kwargs = {}
    if url.startswith("sqlite"):
        engine_kwargs = {"connect_args": {"timeout": SQLITE_TIMEOUT_S}}
        folder = url.split(":///", 1)[-1]
        if folder and folder != ":memory:":
            Path(folder).parent.mkdir(parents=True, exist_ok=True)
    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
    except Exception as err:  # SQLAlchemy's ArgumentError, OperationalError, a driver
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DingLiteError(f"--storage {url}: {first}") from None


def make_sampler(name: str, seed: int | None = None) -> Any:
    """TPE (multivariate, with a constant liar so that workers running at once do not
    all sample the same region) or random search."""
    optuna = import_optuna()
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(
        n_startup_trials=TPE_STARTUP_TRIALS, multivariate=True, constant_liar=True, seed=seed
    )


def make_pruner(name: str, max_step: int, warmup_steps: int) -> Any:
    """The pruner ``name`` for intermediate values reported at env steps up to
    ``max_step``; none prunes before ``warmup_steps``."""
    optuna = import_optuna()
    if name == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=PRUNE_STARTUP_TRIALS, n_warmup_steps=warmup_steps
        )
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=max(1, warmup_steps), max_resource=max_step, reduction_factor=3
        )
    return optuna.pruners.NopPruner()


@dataclass(frozen=True)
class StudyKey:
    """What makes two commands work on the same study: they must agree on it.

    Attributes:
        experiment: the experiment tuned (a bundled name or a file's path).
        objective: "final", "best" or "steps_to_target".
        max_env_step: each seed's budget.
        seeds: the seeds each trial trains.
    """

    experiment: str
    objective: str
    max_env_step: int
    seeds: tuple[int, ...]

    def as_attr(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "objective": self.objective,
            "max_env_step": self.max_env_step,
            "seeds": list(self.seeds),
        }


def create_or_join(
    name: str, storage: Any, direction: str, key: StudyKey, sampler: Any, pruner: Any
) -> Any:
    """Creates the study ``name`` in ``storage``, or joins it if it exists.

    Raises:
        DingLiteError: the study exists but tunes something else (another experiment,
            objective, budget or seeds: named in the message).
    """
    optuna = import_optuna()
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        direction=direction,
        sampler=sampler,
        pruner=pruner,
        load_if_exists=True,
    )
    recorded = study.user_attrs.get(ATTR_SETUP)
    if recorded is None:
        study.set_user_attr(ATTR_SETUP, key.as_attr())
        return study
    mine = key.as_attr()
    differ = [k for k in mine if recorded.get(k) != mine[k]]
    if differ:
        k = differ[0]
        raise DingLiteError(
            f"study {name!r} tunes {k} {recorded.get(k)!r}, not {mine[k]!r}; join it with "
            "the same -c, --objective, --max-env-step and --seeds, or name another --study"
        )
    return study
