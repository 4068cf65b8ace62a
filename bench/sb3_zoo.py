"""Stable-Baselines3's PPO with rl-zoo's settings, the peer of ``bench/zoo.py``'s table.

``RL_ZOO_SB3`` holds rl-baselines3-zoo's published PPO hyperparameters per task (public
facts, written out here): copies, VecNormalize or not, and PPO's keyword arguments.
``python bench/sb3_zoo.py zoo_pendulum 0`` trains one run on the zoo experiment's task
version and budget and prints one JSON line: the mean and std of 20 deterministic
evaluation episodes (normalization frozen), the env steps and the wall seconds.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

EVAL_EPISODES = 20

_MUJOCO_256 = dict(log_std_init=-2.0, ortho_init=False, relu=True, net=[256, 256])

# experiment -> n_envs, normalize, PPO keyword arguments, policy keyword arguments.
RL_ZOO_SB3: dict[str, dict[str, Any]] = {
    "zoo_acrobot": dict(
        n_envs=16,
        normalize=True,
        ppo=dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0),
    ),
    "zoo_mountaincar": dict(
        n_envs=16,
        normalize=True,
        ppo=dict(n_steps=16, gae_lambda=0.98, gamma=0.99, n_epochs=4, ent_coef=0.0),
    ),
    "zoo_mountaincar_continuous": dict(
        n_envs=1,
        normalize=True,
        ppo=dict(
            batch_size=256,
            n_steps=8,
            gamma=0.9999,
            learning_rate=7.77e-5,
            ent_coef=0.00429,
            clip_range=0.1,
            n_epochs=10,
            gae_lambda=0.9,
            max_grad_norm=5,
            vf_coef=0.19,
            use_sde=True,
        ),
        policy=dict(log_std_init=-3.29, ortho_init=False),
    ),
    "zoo_lunarlander": dict(
        n_envs=16,
        normalize=False,
        ppo=dict(
            n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4, ent_coef=0.01
        ),
    ),
    "zoo_lunarlander_continuous": dict(
        n_envs=16,
        normalize=True,
        ppo=dict(
            n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4, ent_coef=0.01
        ),
    ),
    "zoo_pendulum": dict(
        n_envs=4,
        normalize=False,
        ppo=dict(
            n_steps=1024,
            gae_lambda=0.95,
            gamma=0.9,
            n_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            clip_range=0.2,
            use_sde=True,
            sde_sample_freq=4,
        ),
    ),
    "zoo_halfcheetah": dict(
        n_envs=1,
        normalize=True,
        ppo=dict(
            batch_size=64,
            n_steps=512,
            gamma=0.98,
            learning_rate=2.0633e-05,
            ent_coef=0.000401762,
            clip_range=0.1,
            n_epochs=20,
            gae_lambda=0.92,
            max_grad_norm=0.8,
            vf_coef=0.58096,
        ),
        policy=_MUJOCO_256,
    ),
    "zoo_hopper": dict(
        n_envs=1,
        normalize=True,
        ppo=dict(
            batch_size=32,
            n_steps=512,
            gamma=0.999,
            learning_rate=9.80828e-05,
            ent_coef=0.00229519,
            clip_range=0.2,
            n_epochs=5,
            gae_lambda=0.99,
            max_grad_norm=0.7,
            vf_coef=0.835671,
        ),
        policy=_MUJOCO_256,
    ),
    "zoo_walker2d": dict(
        n_envs=1,
        normalize=True,
        ppo=dict(
            batch_size=32,
            n_steps=512,
            gamma=0.99,
            learning_rate=5.05041e-05,
            ent_coef=0.000585045,
            clip_range=0.1,
            n_epochs=20,
            gae_lambda=0.95,
            max_grad_norm=1,
            vf_coef=0.871923,
        ),
        policy=_MUJOCO_256,
    ),
    "zoo_ant": dict(
        n_envs=1,
        normalize=True,
        ppo=dict(
            batch_size=32,
            n_steps=512,
            gamma=0.98,
            learning_rate=1.90609e-05,
            ent_coef=4.9646e-07,
            clip_range=0.1,
            n_epochs=10,
            gae_lambda=0.8,
            max_grad_norm=0.6,
            vf_coef=0.677239,
        ),
        policy=_MUJOCO_256,
    ),
    "zoo_swimmer": dict(n_envs=1, normalize=True, ppo=dict(gamma=0.9999)),
}


def run_sb3(name: str, seed: int) -> dict:
    """Trains SB3's PPO with rl-zoo's settings on zoo experiment ``name``'s task and budget,
    then evaluates 20 deterministic episodes with the normalization frozen."""
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from ding_lite.config.zoo import zoo_row

    row = zoo_row(name)
    settings = RL_ZOO_SB3[name]
    ppo = dict(settings["ppo"])
    policy = dict(settings.get("policy", {}))
    if policy.pop("relu", False):
        policy["activation_fn"] = torch.nn.ReLU
    if "net" in policy:
        net = policy.pop("net")
        policy["net_arch"] = dict(pi=net, vf=net)
    start = time.perf_counter()
    env = make_vec_env(row.task, n_envs=settings["n_envs"], seed=seed)
    if settings["normalize"]:
        env = VecNormalize(env, gamma=ppo.get("gamma", 0.99))
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", policy_kwargs=policy, **ppo)
    model.learn(total_timesteps=row.budget)
    wall = time.perf_counter() - start
    returns = []
    eval_env = gym.make(row.task)
    for episode in range(EVAL_EPISODES):
        obs, _ = eval_env.reset(seed=seed + 1_000_003 + episode)
        done, total = False, 0.0
        while not done:
            if settings["normalize"]:
                obs = env.normalize_obs(obs)
            action, _ = model.predict(obs[None], deterministic=True)
            obs, reward, terminated, truncated, _ = eval_env.step(action[0])
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return {
        "eval_return": float(np.mean(returns)),
        "eval_std": float(np.std(returns)),
        "eval_episodes": EVAL_EPISODES,
        "envstep": row.budget,
        "wall_s": round(wall, 1),
    }


if __name__ == "__main__":
    print(json.dumps(run_sb3(sys.argv[1], int(sys.argv[2]))))
