"""Zoo: PPO on HalfCheetah-v5, 1M env steps (rl-zoo: 5819 on HalfCheetah-v3).

``mujoco_ppo``'s settings (``CLEANRL_MUJOCO``) with an initial log-std of -1 (less noise
from the start). Needs ``pip install -e '.[mujoco]'``.
"""

from ding_lite.config.config import deep_merge_dicts
from ding_lite.config.zoo import CLEANRL_MUJOCO, ZooRow, zoo_config

row = ZooRow(
    task="HalfCheetah-v5",
    budget=1_000_000,
    rl_zoo=5819.0,
    rl_zoo_task="HalfCheetah-v3",
)
changes = deep_merge_dicts(CLEANRL_MUJOCO, dict(policy=dict(model=dict(log_std_init=-1.0))))
config = zoo_config("zoo_halfcheetah", row, changes)
