"""The coefficient of a KL penalty folded into the reward: fixed, or adapted toward a target.

With ``policy.learn.kl_in_reward``, every step's reward loses ``coef * kl_t`` before the
advantages are computed, where ``kl_t`` estimates KL(policy || reference) at that step from
the log-probabilities of its action under both (``kl_in_reward.estimator``, see
:mod:`~ding_lite.rl_utils.kl_estimators`; ``k1``, the default, is
``log pi_behaviour(a_t | s_t) - log pi_ref(a_t | s_t)``). The adaptive controller
(Ziegler et al., 2019, "Fine-tuning language models from human preferences") moves the
coefficient multiplicatively: after a batch of ``n`` env steps whose mean KL was ``kl``,

    error = clip(kl / target - 1, -0.2, 0.2)
    coef <- coef * (1 + error * n / horizon)

so a KL above the target raises the coefficient, one below lowers it, by at most 20% per
``horizon`` env steps.
"""

from __future__ import annotations

from ding_lite.rl_utils.kl_estimators import KlEstimatorFn, get_kl_estimator

KL_IN_REWARD_TYPES = ("none", "fixed", "adaptive")
"""What ``policy.learn.kl_in_reward.type`` may be."""

MAX_ERROR = 0.2
"""The largest proportional error the adaptive controller acts on, either way."""


class KLController:
    """The KL-in-reward coefficient of one run.

    Args:
        coef: The initial coefficient (``kl_in_reward.coef``), >= 0.
        adaptive: Adapt it toward ``target`` (else it stays fixed).
        target: The KL per step the adaptive controller aims at, > 0.
        horizon: Env steps over which a full proportional error acts, > 0.
        estimator: The per-step KL estimate ``fn(logp, logp_ref)`` (default k1).

    Attributes:
        coef: The coefficient the next batch's rewards are penalized with.
        estimate: ``estimator``.
    """

    def __init__(
        self,
        coef: float,
        *,
        adaptive: bool = False,
        target: float = 0.01,
        horizon: int = 10_000,
        estimator: KlEstimatorFn | None = None,
    ) -> None:
        self.estimate = estimator or get_kl_estimator("k1")
        self.coef = float(coef)
        self.adaptive = adaptive
        self.target = float(target)
        self.horizon = int(horizon)

    def update(self, kl: float, n_steps: int) -> None:
        """Takes the mean per-step KL of a batch of ``n_steps`` env steps into account
        (no change for a fixed coefficient)."""
        if not self.adaptive:
            return
        error = min(max(kl / self.target - 1.0, -MAX_ERROR), MAX_ERROR)
        self.coef *= 1.0 + error * n_steps / self.horizon

    def state_dict(self) -> dict[str, float]:
        """The coefficient, for checkpoints (an adapted one resumes where it was)."""
        return {"coef": self.coef}

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Restores what :meth:`state_dict` returned."""
        self.coef = float(state["coef"])
