"""PPO in one room: the policy, its settings, its update and the update's loss terms.

- :mod:`~ding_lite.policy.ppo.policy`: :class:`PPOPolicy`, the model and how it acts;
- :mod:`~ding_lite.policy.ppo.settings`: :class:`PPOSettings`, every key the update reads,
  and :func:`check_update_config`, the config's checks;
- :mod:`~ding_lite.policy.ppo.prepare` and :mod:`~ding_lite.policy.ppo.advantages`: a
  rollout refreshed with the learner's policy, then its advantages;
- :mod:`~ding_lite.policy.ppo.update`: :class:`PPOUpdate`, the epochs of minibatch steps,
  top to bottom; :mod:`~ding_lite.policy.ppo.batches`: which segments each epoch visits;
- :mod:`~ding_lite.policy.ppo.terms`: the loss terms' registry (a new term is one
  :func:`register_loss_term`).

The maths itself (GAE, the clipped surrogate, the value loss, the policy-loss registry)
is ``ding_lite.rl_utils``.
"""

from ding_lite.policy.ppo.policy import PPOPolicy
from ding_lite.policy.ppo.settings import PPOSettings, check_update_config
from ding_lite.policy.ppo.terms import (
    LOSS_TERM_REGISTRY,
    register_loss_term,
    unregister_loss_term,
)
from ding_lite.policy.ppo.update import PPOUpdate

__all__ = [
    "LOSS_TERM_REGISTRY",
    "PPOPolicy",
    "PPOSettings",
    "PPOUpdate",
    "check_update_config",
    "register_loss_term",
    "unregister_loss_term",
]
