"""Air combat: two aircraft and homing missiles in a 2D arena (see :mod:`.physics`)."""

from ding_lite.envs.aircombat.agents import (
    Agent,
    CrankAgent,
    PlaceholderAgent,
    RandomAgent,
    create_agent,
    register_agent,
)
from ding_lite.envs.aircombat.env import AirCombatEnv

__all__ = [
    "Agent",
    "AirCombatEnv",
    "CrankAgent",
    "PlaceholderAgent",
    "RandomAgent",
    "create_agent",
    "register_agent",
]
