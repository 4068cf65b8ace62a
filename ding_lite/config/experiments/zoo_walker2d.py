"""Zoo: PPO on Walker2d-v5, 1M env steps (rl-zoo: 3479 on Walker2d-v3).

``mujoco_ppo``'s settings (``CLEANRL_MUJOCO``). Needs ``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.zoo import CLEANRL_MUJOCO, ZooRow, zoo_config

row = ZooRow(
    task="Walker2d-v5",
    budget=1_000_000,
    rl_zoo=3479.0,
    rl_zoo_task="Walker2d-v3",
)
changes = CLEANRL_MUJOCO
config = zoo_config("zoo_walker2d", row, changes)
