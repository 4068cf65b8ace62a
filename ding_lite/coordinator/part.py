"""What the coordinator hands the parts that act for it (the collector pool, the learner
link): its state and its collaborators, each passed in by name, never the coordinator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ding_lite.coordinator.ledger import RolloutLedger
from ding_lite.coordinator.state import CoordinatorState
from ding_lite.coordinator.workers import Restarter, Transport


class CoordinatorPart:
    """A part of the coordinator: it changes the coordinator's state and talks to workers.

    Args:
        state: the coordinator's state (what a restarted coordinator takes back).
        transport: the task transport.
        ledger: the rollout ledger.
        cfg: the resolved config (``config``: the same as plain values, for start tasks).
        logger: the coordinator's logger.
        restarter: replaces lost or failed workers; None: nobody does.
        save: saves the state for a restarted coordinator (its argument names the change).
        stop_run: ends the run with a reason and a detail.
    """

    def __init__(
        self,
        *,
        state: CoordinatorState,
        transport: Transport,
        ledger: RolloutLedger,
        cfg: Any,
        config: dict[str, Any],
        logger: Any,
        restarter: Restarter | None,
        save: Callable[[str], None],
        stop_run: Callable[..., None],
    ) -> None:
        self.state, self.transport, self.ledger = state, transport, ledger
        self.cfg, self.config, self.logger = cfg, config, logger
        self.restarter, self.save, self.stop_run = restarter, save, stop_run
