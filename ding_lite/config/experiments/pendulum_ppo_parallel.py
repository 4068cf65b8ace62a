"""pendulum_ppo for the parallel pipeline: 1 learner, 2 collectors of 8 copies each (the
serial run's 16 per iteration); target -200."""

from ding_lite.config.experiments.pendulum_ppo import config as _serial

config = dict(
    _serial,
    exp_name="pendulum_ppo_parallel",
    env=dict(name="pendulum", num_envs=8),
    system=dict(learners=1, collectors=2, max_policy_lag=2),
    # A restarted learner resumes from its newest checkpoint: lose at most 5 iterations.
    learner=dict(hook=dict(_serial.get("learner", {}).get("hook", {}), save_ckpt_after_iter=5)),
)
