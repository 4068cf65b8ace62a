"""Zoo: PPO on Ant-v5, 1M env steps (rl-zoo: 1327 on Ant-v3).

``mujoco_ppo``'s settings (``CLEANRL_MUJOCO``) with an initial log-std of -1, as
``zoo_halfcheetah`` (tuning seeds 10 and 11: 1863 and 2484). Needs
``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.config import deep_merge_dicts
from ding_lite.config.zoo import CLEANRL_MUJOCO, ZooRow, zoo_config

row = ZooRow(
    task="Ant-v5",
    budget=1_000_000,
    rl_zoo=1327.0,
    rl_zoo_task="Ant-v3",
)
changes = deep_merge_dicts(CLEANRL_MUJOCO, dict(policy=dict(model=dict(log_std_init=-1.0))))
config = zoo_config("zoo_ant", row, changes)
