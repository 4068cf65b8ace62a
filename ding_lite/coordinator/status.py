"""What the coordinator knows about a run: the figures the launcher prints and saves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from ding_lite.coordinator.marks import BEST, LineMark, OneOf, Shape
from ding_lite.utils.stop import STOP_REASONS

RECENT_LAGS = 20  # iterations whose mean lag status.json shows
Line = Annotated[str, LineMark()]
Best = Annotated[dict, BEST]
FirstEval = Annotated[dict, Shape((("return_mean", "number"), ("win_rate", "number?")))]


@dataclass
class RunStatus:
    """The run as the coordinator sees it; ``on_status`` callbacks and result.json read it."""

    envstep: int = 0
    train_iter: int = 0
    policy_version: int = 0
    policy_lag: float = 0.0  # mean lag of the rollouts the last iteration trained on
    policy_lag_max: int = 0  # the largest lag of any rollout trained on in the run
    lag_sum: float = 0.0  # sum of the iterations' mean lags (for the run's mean)
    recent_lags: list[float] = field(default_factory=list)  # the last iterations' mean lags
    iterations: int = 0  # iterations of this run that trained (a resumed one's not counted)
    gradient_steps: int = 0  # minibatches the learner trained on in the run
    dropped_env_steps: int = 0  # env steps of rollouts dropped stale, invalid or rolled back
    dropped: int = 0  # rollouts dropped for any reason (the ledger says which)
    eval_return: float | None = None
    eval_policy_version: int | None = None  # the policy version the latest evaluation ran
    eval_seconds: float | None = None  # how long the latest evaluation took (perf/eval_s)
    eval_episodes: int = 0  # episodes the latest evaluation covered (copies x agents)
    eval_win_rate: float | None = None  # envs that report episode outcomes only
    solved: bool = False
    best_eval: Best | None = None  # {"policy_version", "return_mean"} of the best evaluation
    eval_before_train: FirstEval | None = None  # evaluator.before_train: version 0's evaluation
    best_sent: int | None = None  # the best evaluation's version the learner has been told
    best_checkpoint: Best | None = None  # what the learner's ckpt/best.pt holds (it says)
    done: bool = False
    stop_reason: Annotated[str, OneOf(STOP_REASONS)] | None = None  # why the run ended
    stop_detail: Line = ""  # one line saying why, for failures
    collectors_alive: int = 0
    learners_alive: int = 0
    learner_ranks: int = 1  # ranks of the running learner, as its start answer says
    failed_tasks: int = 0
    restarts: int = 0
    coordinator_restarts: int = 0  # times a new coordinator took the run back
    skipped_steps: int = 0
    waiting_on: Line = ""  # what the run waits for right now (the watchdog names it)
    ledger: dict[str, int] = field(default_factory=dict)
    episode_returns: list[float] = field(default_factory=list)
    episode_outcomes: list[float] = field(default_factory=list)
    sync_latency_s: list[float] = field(default_factory=list)
    learn_latency_s: list[float] = field(default_factory=list)
    control_latency_s: list[float] = field(default_factory=list)
    # perf_counter() and envstep at the first update: the steady rate leaves out start-up.
    first_learn_at: float | None = None
    first_learn_envstep: int = 0

    def trained(self, info: dict) -> None:
        """Books an iteration that trained: its policy lag and gradient steps."""
        self.iterations += 1
        self.policy_lag, self.lag_sum = info["policy_lag"], self.lag_sum + info["policy_lag"]
        self.recent_lags = [*self.recent_lags[1 - RECENT_LAGS :], info["policy_lag"]]
        self.policy_lag_max = max(self.policy_lag_max, info["policy_lag_max"])
        self.gradient_steps += info["minibatches"]

    @property
    def policy_lag_mean(self) -> float:
        """The mean over this run's iterations of each one's mean policy lag."""
        return self.lag_sum / self.iterations if self.iterations else 0.0


class StopRequest:
    """A stop asked for from outside the coordinator's loop (an operator, a lost link):
    one assignment, so it is safe to set from another thread."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def request(self, reason: str) -> None:
        """Ends the run after the current step with ``reason``."""
        self.reason = reason
