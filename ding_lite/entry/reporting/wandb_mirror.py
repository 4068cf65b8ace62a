"""A run mirrored to Weights & Biases (``logger.wandb``), as CleanRL's ``--track`` does.

One W&B run per ding_lite run, made by the process that holds the run's dir: the serial
process, or a parallel run's coordinator. It gets the resolved config (``system.token``
left out), every scalar any process of the run writes to tensorboard under
``<run dir>/tb``, and result.json's figures as the run's summary.

The scalars are read back from the event files as they grow (every :data:`POLL_S`
seconds, and once more at the end), the way ``ding-lite dashboard`` reads them, rather
than sent by each writer: a parallel run's learners (on other machines too) need neither
wandb nor a network, their figures still land in the one W&B run beside the
coordinator's, and W&B holds exactly what tensorboard holds. Each row keeps the scalars'
tensorboard tags and carries ``global_step`` (the env step, tensorboard's x axis), which
every metric is plotted against. The price: a scalar reaches W&B up to the writers' flush
interval (10 s) plus :data:`POLL_S` after it was logged.

wandb is imported only when ``logger.wandb`` is on: ``pip install 'ding-lite[wandb]'``.
A failure of W&B during a run (a network error) is logged and ends the mirroring, never
the run.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.utils.tb_tail import TbTail

POLL_S = 5.0
FINISH_TIMEOUT_S = 60.0
STEP_KEY = "global_step"
HIDDEN_KEYS = (("system", "token"),)  # never sent: the parallel run's shared secret


def wandb_enabled(cfg: Any) -> bool:
    """Whether the config asks for the W&B mirror."""
    return bool((cfg.get("logger") or {}).get("wandb"))


def wandb_installed() -> bool:
    """Whether the wandb package can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec("wandb") is not None
    except (ImportError, ValueError):  # a broken install, or a stub without a spec
        return False


def check_wandb(cfg: Any) -> None:
    """Refuses ``logger.wandb=true`` where the wandb package is missing (imports nothing).

    Raises:
        ConfigError: wandb is asked for and not installed.
    """
    if wandb_enabled(cfg) and not wandb_installed():
        raise ConfigError(
            "logger.wandb=true needs the wandb package: pip install 'ding-lite[wandb]' "
            "(or set logger.wandb=false)"
        )


def _plain_config(cfg: Any) -> dict[str, Any]:
    """The config as plain dicts, with the keys of :data:`HIDDEN_KEYS` masked."""

    def plain(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: plain(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [plain(v) for v in node]
        return node

    out = plain(cfg)
    for section, key in HIDDEN_KEYS:
        if out.get(section, {}).get(key) is not None:
            out[section][key] = "<hidden>"
    return out


class WandbMirror:
    """Mirrors the tensorboard scalars under ``tb_dir`` into a started W&B run.

    Args:
        run: the W&B run (``wandb.init``'s result).
        tb_dir: the run's ``<run dir>/tb``; every event file below it is read.
        poll_s: seconds between two reads of the event files.
    """

    def __init__(self, run: Any, tb_dir: str | os.PathLike, poll_s: float = POLL_S) -> None:
        self.run = run
        self.tb_dir = Path(tb_dir)
        self.poll_s = poll_s
        self.points = 0  # scalars mirrored so far
        # A damaged record or an unreadable event file is logged once and skipped.
        self._tail = TbTail(self.tb_dir, warn=_warn)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._broken = False
        self._finished = False
        self._thread = threading.Thread(target=self._poll, name="ding_lite-wandb", daemon=True)

    @classmethod
    def start(cls, cfg: Any, run_path: str | os.PathLike) -> WandbMirror | None:
        """Starts the W&B run of a run (None when ``logger.wandb`` is off).

        Its files go under ``$WANDB_DIR`` when set, else ``<run dir>/wandb``; its name is
        the run dir's name. ``WANDB_MODE=offline`` keeps everything on disk.

        Raises:
            ConfigError: wandb is not installed.
        """
        if not wandb_enabled(cfg):
            return None
        check_wandb(cfg)
        import wandb

        run_path = Path(run_path)
        log = cfg.logger
        try:
            run = wandb.init(
                project=log.wandb_project,
                entity=log.wandb_entity,
                group=log.wandb_group,
                name=run_path.resolve().name,
                job_type="train",
                config=_plain_config(cfg),
                dir=os.environ.get("WANDB_DIR") or str(run_path),
                reinit="create_new",
                # The run's own output stays as it is: no console capture, no code upload.
                settings=wandb.Settings(console="off", save_code=False),
            )
        except Exception as err:  # not logged in, no network, a bad entity: say so, once
            detail = " ".join(str(err).split())[:300]
            raise ConfigError(
                f"logger.wandb: W&B could not start a run ({type(err).__name__}: {detail}); "
                "run 'wandb login', or set WANDB_MODE=offline to keep the run on disk"
            ) from None
        run.define_metric(STEP_KEY)
        run.define_metric("*", step_metric=STEP_KEY)
        mirror = cls(run, run_path / "tb")
        mirror._thread.start()
        get_logger().info(f"W&B run {run.name} ({run.project}): mirroring {mirror.tb_dir}")
        return mirror

    def sync(self) -> int:
        """Sends the scalars written since the last call; returns how many."""
        with self._lock:
            if self._broken or not self.tb_dir.is_dir():
                return 0
            points = self._tail.read_new()
            try:
                for row in _rows(points):
                    self.run.log(row)
            except Exception as err:  # W&B's failure must not end the training run
                self._broken = True
                get_logger().warning(f"W&B mirroring stopped: {type(err).__name__}: {err}")
                return 0
            self.points += len(points)
            return len(points)

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.sync()

    def finish(
        self,
        result: dict[str, Any] | None = None,
        exit_code: int = 0,
        timeout: float = FINISH_TIMEOUT_S,
    ) -> bool:
        """Sends what is left, ``result`` as the run's summary, and ends the W&B run.

        Safe to repeat (later calls do nothing). Gives up after ``timeout`` seconds (an
        online run still uploading: ``wandb sync`` the run's folder later). Returns whether
        it ended in time.
        """
        if self._finished:
            return True
        self._finished = True
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        done = threading.Event()

        def close() -> None:
            try:
                self.sync()
                if result is not None and not self._broken:
                    self.run.summary.update(result)
                self.run.finish(exit_code=exit_code)
            except Exception as err:  # reported; the run's outcome was decided before
                get_logger().warning(f"W&B run did not end cleanly: {type(err).__name__}: {err}")
            finally:
                done.set()

        closer = threading.Thread(target=close, name="ding_lite-wandb-finish", daemon=True)
        closer.start()
        if not done.wait(timeout):
            get_logger().warning(
                f"W&B run {self.run.name} did not end within {timeout:g} s; "
                f"upload it later with: wandb sync {self.run.dir}"
            )
            return False
        return True


def _warn(line: str) -> None:
    get_logger().warning(f"W&B mirror: {line}")


def _rows(points: list[tuple[float, int, str, float]]) -> list[dict[str, Any]]:
    """W&B history rows from time-ordered points: consecutive points of one step go in one
    row until a tag repeats (several episodes ending in one iteration: one row each)."""
    rows: list[dict[str, Any]] = []
    row: dict[str, Any] = {}
    for _, step, tag, value in points:
        if row and (row[STEP_KEY] != step or tag in row):
            rows.append(row)
            row = {}
        row.setdefault(STEP_KEY, step)
        row[tag] = value
    if row:
        rows.append(row)
    return rows
