"""Tasks that reach a learner again: a start while it trains the run, a learn task answered.

Two coordinators may ask a training learner to start again: one restarted before it booked
the answer to the start it sent (the very same task comes again), and one that lost contact
with the learner (a cut link, a long pause) and would otherwise resume a new learner from
the checkpoint: it asks with ``take_back`` and the same run. Both get where training stands
(``running`` true); anything else is refused, so a second run never lands on a learner
that is busy with another. A learn task whose batch id was answered before (a coordinator
restarted while the answer was on its way) gets that answer again, not a second update.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ding_lite.utils.errors import DingLiteError

SAME = "same"
TAKE_BACK = "take back"
_ANSWERS_KEPT = 8  # learn answers remembered by batch id


def start_again(started_with: dict[str, Any] | None, data: dict[str, Any]) -> str:
    """:data:`SAME` or :data:`TAKE_BACK` for a start task ``data`` that reaches a learner
    started with ``started_with``.

    Raises:
        DingLiteError: neither (another run, or a plain second start).
    """
    if data == started_with:
        return SAME
    if data.get("take_back") is True and _run_of(data) == _run_of(started_with):
        return TAKE_BACK
    raise DingLiteError("learner already started")


def _run_of(start: dict[str, Any] | None) -> dict[str, Any]:
    """What names the run in a start task: its config, less what a resume changes (the
    learner's checkpoint to load and the hook that would load the config's own)."""
    config = dict((start or {}).get("config") or {})
    learner = config.get("learner")
    if isinstance(learner, dict):
        config["learner"] = {k: v for k, v in learner.items() if k not in ("load_path", "hook")}
    return config


class AnswerBook:
    """The answers of the last learn tasks, by batch id (the newest few)."""

    def __init__(self, keep: int = _ANSWERS_KEPT) -> None:
        self._keep = keep
        self._answers: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def get(self, batch_id: str | None) -> dict[str, Any] | None:
        """The answer given to ``batch_id`` (None: not answered, or no id)."""
        return self._answers.get(batch_id) if batch_id is not None else None

    def put(self, batch_id: str | None, answer: dict[str, Any]) -> None:
        """Books ``answer`` under ``batch_id`` (no id: nothing to book)."""
        if batch_id is not None:
            self._answers[batch_id] = answer
            while len(self._answers) > self._keep:
                self._answers.popitem(last=False)
