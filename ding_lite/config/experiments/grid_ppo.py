"""PPO with Metta's settings on the bundled ``grid`` world: a CNN encoder and an LSTM core
trained on BPTT segments, prioritized segments, 4 agents per env copy sharing one policy.

Each agent sees an 11 x 11 egocentric window of 5 channels (walls, the two resource kinds,
other agents, the cue); the cue names the paying kind during the first step of an episode
only, so the LSTM must keep it; agents compete for the same resources. 32 copies x 4
agents x 32 steps per iteration (one 32-step episode), each agent's episode one 32-step
segment (the gradient reaches the cue from every reward of the episode), segments drawn
with probability rising with their advantages (``prio_alpha``), 8 epochs over each
iteration's data. The budget, 75 iterations, is where the CNN has learned to keep the cue
and the MLP encoder not yet (it does some 50,000 env steps later). Figures beside a random
policy, the MLP encoder (``policy.model.encoder=mlp``) and no memory
(``policy.model.core=none``): docs/grid.rst (``bench/grid_encoders.py``).
"""

from typing import Any

config: dict[str, Any] = dict(
    exp_name="grid_ppo",
    max_env_step=76_800,
    env=dict(name="grid", num_envs=32),
    policy=dict(
        model=dict(
            encoder="cnn",
            cnn_channels=[16, 16],
            cnn_kernel=3,
            hidden_sizes=[128],
            activation="relu",
            core="lstm",
            core_size=64,
            share_encoder=True,
        ),
        learn=dict(
            n_epochs=8,
            batch_size=1024,
            bptt_horizon=32,
            prio_alpha=0.5,
            prio_beta0=0.6,
            learning_rate=1e-3,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_norm=0.5,
        ),
        collect=dict(n_steps=32, gamma=0.95, gae_lambda=0.95),
    ),
    learner=dict(hook=dict(log_show_after_iter=10)),
    evaluator=dict(eval_freq=0, n_episodes=128),
)
