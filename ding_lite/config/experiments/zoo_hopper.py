"""Zoo: PPO on Hopper-v5, 1M env steps (rl-zoo: 2410 on Hopper-v3).

``mujoco_ppo``'s settings (``CLEANRL_MUJOCO``). Needs ``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.zoo import CLEANRL_MUJOCO, ZooRow, zoo_config

row = ZooRow(
    task="Hopper-v5",
    budget=1_000_000,
    rl_zoo=2410.0,
    rl_zoo_task="Hopper-v3",
)
changes = CLEANRL_MUJOCO
config = zoo_config("zoo_hopper", row, changes)
