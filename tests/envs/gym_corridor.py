"""A user's own gymnasium.Env, for the tests of ``env.name=gym:gym_corridor:Corridor-v0``.

Importing this module registers ``Corridor-v0`` with gymnasium, as a user's package would.
Each step shows a sign (-1 or +1); action 1 for +1 and action 0 for -1 earn 1.
"""

import gymnasium as gym
import numpy as np

ENV_ID = "Corridor-v0"
LENGTH = 8


class Corridor(gym.Env):
    """Match the sign shown: ``LENGTH`` steps, return at most ``LENGTH``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self._sign = self._draw()
        return self._sign, {}

    def step(self, action):
        reward = float(int(action) == int(self._sign[0] > 0))
        self._t += 1
        self._sign = self._draw()
        return self._sign, reward, False, self._t >= LENGTH, {}

    def _draw(self):
        return np.array([self.np_random.choice((-1.0, 1.0))], dtype=np.float32)


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=Corridor)
