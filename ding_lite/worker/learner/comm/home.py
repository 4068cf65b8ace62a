"""A learner's link to the run's home (the coordinator's host) on the ``http`` data plane.

There the learner may share no folder with the coordinator. Each checkpoint it writes
(``ckpt_iter<N>.pt``, ``best.pt``) is sent home after the iteration (and the run) that
wrote it, with its tensorboard event files as they are then, so ``--resume``, ``ding-lite
status`` and ``plot`` work from the run dir; a learner started to resume first fetches the
checkpoints the coordinator names (newest first) into its own ``ckpt/``, and loads from
there as any learner does (``weights_only``, checked whole). A file that cannot be sent
now is sent with the next one; sending never stops training.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.paths import BEST_CKPT, CKPT_GLOB, parse_ckpt_name
from ding_lite.worker.learner.learner_hook import CallbackHook, LearnerHook

HOME_HOOK_PRIORITY = 95  # after the checkpoint hooks (and the publish step, 90)


class HomeLink:
    """Fetches and sends a learner's checkpoints (see the module).

    Args:
        peer: the coordinator as a file peer (``slave.files.home(...)``).
        ckpt_dir: the learner's checkpoint folder.
        limit: the largest checkpoint fetched, in bytes.
        tb_dir: the learner's tensorboard folder (``tb/<worker id>``; None: none sent).
        logger: the learner's logger.
    """

    def __init__(
        self, peer: Any, ckpt_dir: Path, limit: int, logger: Any, tb_dir: Path | None = None
    ) -> None:
        self._peer = peer
        self.ckpt_dir = ckpt_dir
        self.tb_dir = tb_dir
        self._limit = limit
        self._logger = logger
        self._sent: dict[str, tuple[int, int]] = {}  # route -> (mtime_ns, size) sent

    @classmethod
    def for_run(cls, cfg: Any, slave: Any, fetch: Any, logger: Any) -> HomeLink | None:
        """The link of a run on the http plane (None: the files plane, or no server), with
        the checkpoints ``fetch`` names (a resume's) already fetched.

        Raises:
            ValueError: ``fetch`` is not a list of checkpoint names.
        """
        if cfg.system.data_plane != "http" or slave is None:
            return None
        timeout = cfg.system.http_timeout
        link = cls(
            slave.files.home(timeout),
            Path(cfg.exp_dir) / "ckpt",
            cfg.system.max_rollout_bytes,
            logger,
        )
        link.fetch(fetch or [])
        return link

    def fetch(self, names: Any) -> None:
        """Fetches the named checkpoints from home (one that cannot be is said and skipped:
        the learner resumes from the newest it has).

        Raises:
            ValueError: ``names`` is not a list of checkpoint names.
        """
        if not isinstance(names, list) or not all(map(_is_ckpt_name, names)):
            raise ValueError("field 'fetch' must be a list of checkpoint names")
        for name in names:
            try:
                self._peer.get(f"/run/ckpt/{name}", self.ckpt_dir / name, self._limit)
            except DingLiteError as err:
                self._logger.warning(f"could not fetch checkpoint {name} from home: {err}")
                continue
            stat = (self.ckpt_dir / name).stat()
            self._sent[f"/run/ckpt/{name}"] = (stat.st_mtime_ns, stat.st_size)  # home has it
            self._logger.info(f"fetched checkpoint {name} from the run's home")

    def send_new(self) -> None:
        """Sends home the newest periodic checkpoint and ``best.pt`` if either changed."""
        periodic = sorted(
            (n, p)
            for p in self.ckpt_dir.glob(CKPT_GLOB)
            if (n := parse_ckpt_name(p.name)) is not None
        )
        for path in [p for _, p in periodic[-1:]] + [self.ckpt_dir / BEST_CKPT]:
            self._send(path, f"/run/ckpt/{path.name}")
        if self.tb_dir is not None and self.tb_dir.is_dir():
            for path in sorted(self.tb_dir.glob("events.out.tfevents.*")):
                self._send(path, f"/run/tb/{self.tb_dir.name}/{path.name}")

    def _send(self, path: Path, route: str) -> None:
        """Sends ``path`` to ``route`` at home unless it went there as it is now."""
        with contextlib.suppress(FileNotFoundError):
            stat = path.stat()
            if self._sent.get(route) == (stat.st_mtime_ns, stat.st_size):
                return
            try:
                self._peer.put(route, path)
            except DingLiteError as err:
                self._logger.warning(f"could not send {path.name} home (sent later): {err}")
                return
            self._sent[route] = (stat.st_mtime_ns, stat.st_size)

    def hooks(self) -> list[LearnerHook]:
        """Send home after every iteration and after the run (after their checkpoints)."""
        return [
            CallbackHook(f"home_{where}", HOME_HOOK_PRIORITY, position=where, callback=self._after)
            for where in ("after_iter", "after_run")
        ]

    def _after(self, learner: Any) -> None:
        self.send_new()

    def close(self) -> None:
        self._peer.close()


def _is_ckpt_name(name: Any) -> bool:
    return isinstance(name, str) and (name == BEST_CKPT or parse_ckpt_name(name) is not None)
