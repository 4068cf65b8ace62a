"""Physical constants of the air-combat env, all in one place (SI units: m, s, rad).

The arena is a square ``[-ARENA_HALF, ARENA_HALF]^2``; aircraft are held inside it (a wall),
missiles that leave it are lost. The scripted agents derive their thresholds from these
numbers, so changing a constant here rescales them too.
"""

from __future__ import annotations

import math

DT = 1.0  # seconds per env step
ARENA_HALF = 40_000.0  # half width of the square arena (80 km x 80 km)
MAX_EPISODE_STEPS = 600  # time limit: 10 minutes of flight, then a draw

# Aircraft
MIN_SPEED = 150.0  # speed at throttle 0
MAX_SPEED = 300.0  # speed at throttle 1
ACCEL = 15.0  # m/s^2: the speed moves toward the throttle's target at most this fast
TURN_RATE = math.radians(12.0)  # rad/s at |rudder| = 1
MISSILES = 4  # missiles carried by each aircraft
LAUNCH_COOLDOWN = 5.0  # s between two launches of one aircraft

# Missiles (pure-pursuit homing on the enemy aircraft)
MISSILE_SPEED = 800.0  # constant speed
MISSILE_TURN_RATE = math.radians(20.0)  # rad/s
MISSILE_FLIGHT_TIME = 50.0  # s of fuel; the missile is lost when it runs out
MISSILE_MAX_RANGE = MISSILE_SPEED * MISSILE_FLIGHT_TIME  # 40 km of straight flight
KILL_RADIUS = 150.0  # closest approach within a step below this destroys the target
LOCK_ANGLE = math.radians(45.0)  # a launch with the enemy further off the nose finds no lock:
# the missile is spent (counted as fired, and wasted for P1) but nothing flies
MAW_RANGE = 20_000.0  # the missile-approach warner sees enemy missiles within this range

# Initial states: the two aircraft start this far apart around a centre near the middle.
START_MIN_SEPARATION = 30_000.0
START_MAX_SEPARATION = 50_000.0
START_CENTRE_SPREAD = 0.25 * ARENA_HALF
START_SPEED = 0.5 * (MIN_SPEED + MAX_SPEED)

# Observation normalizers
DISTANCE_SCALE = 2.0 * math.sqrt(2.0) * ARENA_HALF  # the arena's diagonal

# Reward shaping for P1 (reward="shaped"); the outcome itself is +1 / -1 / 0.
SURVIVAL_REWARD = 0.001  # per step P1 is alive after the step
WASTED_MISSILE_PENALTY = 0.05  # per P1 missile lost without a hit (fuel out or left arena)
DEFEATED_MISSILE_REWARD = 0.1  # per P2 missile lost without a hit while P1 is alive
