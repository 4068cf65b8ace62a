"""Zoo: PPO on Swimmer-v5, 1M env steps (rl-zoo: 281.6 on Swimmer-v3).

``mujoco_ppo``'s settings (``CLEANRL_MUJOCO``) with rl-zoo's discount of 0.9999: a
swimmer's progress pays off over hundreds of steps. Needs ``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.config import deep_merge_dicts
from ding_lite.config.zoo import CLEANRL_MUJOCO, ZooRow, zoo_config

row = ZooRow(
    task="Swimmer-v5",
    budget=1_000_000,
    rl_zoo=281.6,
    rl_zoo_task="Swimmer-v3",
)
changes = deep_merge_dicts(CLEANRL_MUJOCO, dict(policy=dict(collect=dict(gamma=0.9999))))
config = zoo_config("zoo_swimmer", row, changes)
