"""Names of a rollout's fields that more than one layer reads (the collector writes them, the
data checks and the learner's advantage step read them)."""

EPISODE_INDEX_KEYS = ("episode", "group", "stream", "step")
"""The int64 fields a collector adds for an episode-level estimator: each row's episode
number (per env copy, counted from the collector's first reset), its reset group
(``copy // reset_group_size``), the collector's stream (a number it draws when it starts: a
restarted collector is a new stream) and the step's number (per env copy, counted from that
start), by which a rollout missing in between is noticed. The advantage step builds keys
from them, so a rollout file's values must be small and non-negative, and its stream one
number."""
