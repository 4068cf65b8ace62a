"""The league: a pool of players, who meets whom, and how each match moves the table.

Pure Python (no torch, no files): the players are names, the outcomes numbers, and the
state a plain dict that a checkpoint or the coordinator's state carries. The serial and
parallel pipelines build on it (see docs/league.rst as it grows).
"""

from ding_lite.league.matchmaking import WEIGHTINGS, Matchmaker, pfsp_weights
from ding_lite.league.table import LeagueTable

__all__ = ["WEIGHTINGS", "LeagueTable", "Matchmaker", "pfsp_weights"]
