"""mujoco_ppo for the parallel pipeline (HalfCheetah-v5 by default; target 1500): 1 learner, 2
collectors of 4 copies each (the serial run's 8 per iteration).

A collector runs one rollout ahead of the learner, so the learner trains on data one policy
version old; it corrects for that (docs/parallel.rst, Policy lag): values recomputed with its
own critic, and the decoupled loss, which clips around the learner's policy and weighs each
sample by it over the behaviour policy. ``--collectors 1`` with ``env.num_envs=8`` keeps the
serial batch on one collector.
"""

from ding_lite.config.experiments.mujoco_ppo import config as _serial

config = dict(
    _serial,
    exp_name="mujoco_ppo_parallel",
    env=dict(_serial["env"], num_envs=4),
    policy=dict(
        _serial["policy"],
        learn=dict(_serial["policy"]["learn"], recompute_values=True, policy_loss="decoupled"),
    ),
    evaluator=dict(_serial["evaluator"], stop_value=1500.0),
    system=dict(learners=1, collectors=2, max_policy_lag=2),
    # A restarted learner resumes from its newest checkpoint: lose at most 5 iterations.
    learner=dict(hook=dict(_serial.get("learner", {}).get("hook", {}), save_ckpt_after_iter=5)),
)
