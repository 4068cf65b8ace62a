"""Watching a run as it happens: ``status.json`` (written by every run), ``ding-lite status``
(a terminal view) and ``ding-lite dashboard`` (a local web page with learning curves)."""
