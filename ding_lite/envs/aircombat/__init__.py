"""Air combat: two aircraft and homing missiles in a 2D arena (see :mod:`.physics`)."""

from ding_lite.envs.aircombat.agents import (
    AGENT_REGISTRY,
    Agent,
    CrankAgent,
    PlaceholderAgent,
    RandomAgent,
    create_agent,
    register_agent,
)
from ding_lite.envs.aircombat.env import AirCombatEnv

__all__ = [
    "AGENT_REGISTRY",
    "Agent",
    "AirCombatEnv",
    "CrankAgent",
    "PlaceholderAgent",
    "RandomAgent",
    "create_agent",
    "register_agent",
]
