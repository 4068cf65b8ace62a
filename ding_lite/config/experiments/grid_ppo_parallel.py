"""grid_ppo for the parallel pipeline: 1 learner, 2 collectors of 16 copies each (the serial
run's 32 per iteration, 4 agents each). The learner corrects for the policy lag of its data
with the decoupled loss (docs/parallel.rst, Policy lag); values are not recomputed, which a
recurrent critic cannot do from single steps. Figures beside the serial run's: docs/grid.rst
(``bench/grid_encoders.py``)."""

from ding_lite.config.experiments.grid_ppo import config as _serial

config = dict(
    _serial,
    exp_name="grid_ppo_parallel",
    env=dict(_serial["env"], num_envs=16),
    policy=dict(
        _serial["policy"],
        learn=dict(_serial["policy"]["learn"], policy_loss="decoupled"),
    ),
    system=dict(learners=1, collectors=2, max_policy_lag=2),
    # A restarted learner resumes from its newest checkpoint: lose at most 5 iterations.
    learner=dict(hook=dict(_serial["learner"]["hook"], save_ckpt_after_iter=5)),
)
