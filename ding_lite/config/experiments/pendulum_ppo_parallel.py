"""pendulum_ppo for the parallel pipeline: 1 learner, 2 collectors of 8 copies each (the
serial run's 16 per iteration); target -200. The learner corrects for the policy lag of its
data (docs/parallel.rst, Policy lag): values recomputed with its own critic and the
decoupled loss."""

from ding_lite.config.experiments.pendulum_ppo import config as _serial

config = dict(
    _serial,
    exp_name="pendulum_ppo_parallel",
    env=dict(name="pendulum", num_envs=8),
    policy=dict(
        _serial["policy"],
        learn=dict(_serial["policy"]["learn"], recompute_values=True, policy_loss="decoupled"),
    ),
    system=dict(learners=1, collectors=2, max_policy_lag=2),
    # A restarted learner resumes from its newest checkpoint: lose at most 5 iterations.
    learner=dict(hook=dict(_serial.get("learner", {}).get("hook", {}), save_ckpt_after_iter=5)),
)
