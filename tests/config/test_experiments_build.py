"""Every bundled experiment builds its training and its evaluation env as configured."""

import pytest

from ding_lite.config.config import EXPERIMENTS, compile_config
from ding_lite.envs.from_config import build_env

BUNDLED_ENVS = [
    name for name in EXPERIMENTS if not compile_config(name).env.name.startswith("gym:")
]


@pytest.mark.parametrize("name", BUNDLED_ENVS)
def test_training_and_evaluation_envs_build(name):
    """The evaluation env is env.kwargs with evaluator.env_kwargs over them (a self-play
    run plays CrankAgent in its evaluation env)."""
    cfg = compile_config(name)
    num_envs = 2 * cfg.env.reset_group_size  # whole reset groups (cartpole_grpo: 8 copies)
    train = build_env(cfg, num_envs, "cpu", 0)
    evaluation = build_env(cfg, num_envs, "cpu", 0, evaluation=True)
    assert train.obs_shape == evaluation.obs_shape
    assert repr(train.action_space) == repr(evaluation.action_space)
    if name == "aircombat_selfplay_ppo":
        assert train.num_agents == 2 and evaluation.num_agents == 1
