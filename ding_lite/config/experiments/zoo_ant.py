"""Zoo: PPO on Ant-v5, 1M env steps (rl-zoo: 1327 on Ant-v3).

``mujoco_ppo``'s settings (``CLEANRL_MUJOCO``). Needs ``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.zoo import CLEANRL_MUJOCO, ZooRow, zoo_config

row = ZooRow(
    task="Ant-v5",
    budget=1_000_000,
    rl_zoo=1327.0,
    rl_zoo_task="Ant-v3",
)
changes = CLEANRL_MUJOCO
config = zoo_config("zoo_ant", row, changes)
