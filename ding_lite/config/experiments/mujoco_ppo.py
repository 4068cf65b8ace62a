"""PPO for MuJoCo continuous control through the gymnasium adapter (default HalfCheetah-v5;
Hopper-v5, Walker2d-v5, Ant-v5, Swimmer-v5 by ``env.name=gym:<id>``).

CleanRL's continuous-control settings: 2,048 samples per iteration (8 copies x 256 steps),
10 epochs of 32 minibatches, learning rate 3e-4 annealed to 0, a state-independent log-std,
value clipping, observation normalization and reward scaling. Needs the ``mujoco`` extra:
``pip install -e '.[mujoco]'``. No target: it trains for 1M env steps and evaluates (10
deterministic episodes) every 50 iterations.
"""

from typing import Any

config: dict[str, Any] = dict(
    exp_name="mujoco_ppo",
    max_env_step=1_000_000,
    env=dict(name="gym:HalfCheetah-v5", num_envs=8),
    policy=dict(
        model=dict(
            hidden_sizes=[64, 64],
            activation="tanh",
            log_std_init=0.0,
            state_dependent_std=False,
            obs_norm=True,
            obs_clip=10.0,
        ),
        learn=dict(
            n_epochs=10,
            batch_size=64,
            learning_rate=3e-4,
            lr_anneal=True,
            clip_ratio=0.2,
            value_clip=True,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
            reward_scale=True,
        ),
        collect=dict(n_steps=256, gamma=0.99, gae_lambda=0.95),
    ),
    evaluator=dict(eval_freq=50, n_episodes=10, stop_value=None),
)
