"""The zoo: tuned experiments, one per task, set against rl-baselines3-zoo's PPO figures.

Each ``zoo_<task>`` experiment module holds a :class:`ZooRow` (the gymnasium task it runs,
its env-step budget, and rl-zoo's published PPO figure with the task version rl-zoo
measured it on) and only the keys it changes from :data:`ZOO_BASE`; :func:`zoo_config`
puts the two together. ``ZOO_BASE`` is Stable-Baselines3's PPO defaults (the settings
rl-zoo's rows start from) and the zoo's evaluation: no target (a zoo run trains its whole
budget), one evaluation at the end, 20 deterministic episodes for every task.
``bench/zoo.py`` trains them and writes the table in docs/benchmarks.rst.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Evaluation episodes of every zoo run (deterministic, at the end of the budget).
ZOO_EVAL_EPISODES = 20

ZOO_BASE: dict[str, Any] = dict(
    env=dict(num_envs=1),
    policy=dict(
        model=dict(hidden_sizes=[64, 64], activation="tanh", log_std_init=0.0),
        learn=dict(
            n_epochs=10,
            batch_size=64,
            learning_rate=3e-4,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=2048, gamma=0.99, gae_lambda=0.95),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=0, n_episodes=ZOO_EVAL_EPISODES, stop_value=None),
)

# ``mujoco_ppo``'s settings (CleanRL's continuous control) as changes to the base: 8 copies
# x 256 steps, 10 epochs of 32 minibatches, learning rate 3e-4 annealed to 0, value
# clipping, observations normalized, rewards scaled. The MuJoCo rows start from them.
CLEANRL_MUJOCO: dict[str, Any] = dict(
    env=dict(num_envs=8),
    policy=dict(
        model=dict(obs_norm=True),
        learn=dict(lr_anneal=True, value_clip=True, reward_scale=True),
        collect=dict(n_steps=256),
    ),
)


@dataclass(frozen=True)
class ZooRow:
    """What a zoo experiment is measured on and against.

    Attributes:
        task: The gymnasium id it trains on (``"HalfCheetah-v5"``).
        budget: Env steps it trains for, rl-zoo's budget for the task.
        rl_zoo: rl-zoo's published PPO figure (mean deterministic evaluation return).
        rl_zoo_task: The task version rl-zoo measured that figure on (``"HalfCheetah-v3"``).
    """

    task: str
    budget: int
    rl_zoo: float
    rl_zoo_task: str


def zoo_config(name: str, row: ZooRow, changes: dict[str, Any]) -> dict[str, Any]:
    """The experiment ``name``: :data:`ZOO_BASE`, its task and budget, then ``changes``."""
    from ding_lite.config.config import deep_merge_dicts

    own = dict(exp_name=name, max_env_step=row.budget, env=dict(name=f"gym:{row.task}"))
    return deep_merge_dicts(deep_merge_dicts(ZOO_BASE, own), changes)


def zoo_row(name: str) -> ZooRow | None:
    """The :class:`ZooRow` of a bundled experiment (None: not a zoo experiment)."""
    if not name.startswith("zoo_"):
        return None
    import importlib

    return importlib.import_module(f"ding_lite.config.experiments.{name}").row


def zoo_changes(name: str) -> dict[str, Any]:
    """The keys a zoo experiment sets over :data:`ZOO_BASE` (its module's ``changes``)."""
    import importlib

    return importlib.import_module(f"ding_lite.config.experiments.{name}").changes
