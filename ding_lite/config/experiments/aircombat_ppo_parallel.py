"""aircombat_ppo for the parallel pipeline: 1 learner, 2 collectors against CrankAgent."""

from ding_lite.config.experiments.aircombat_ppo import config as _serial

config = dict(
    _serial,
    exp_name="aircombat_ppo_parallel",
    env=dict(_serial["env"], num_envs=128),
    system=dict(learners=1, collectors=2, max_policy_lag=2),
    # A restarted learner resumes from its newest checkpoint: lose at most 5 iterations.
    learner=dict(hook=dict(_serial.get("learner", {}).get("hook", {}), save_ckpt_after_iter=5)),
)
