"""A run's options and its run dir: claimed once and held, prepared, resumed, tidied, and
the result.json and summary line it leaves behind."""
