"""The ``ding-lite`` command: its arguments (:mod:`.arguments`), what each subcommand
does (:mod:`.command`), and what each one imports with SIGINT and SIGTERM held back
(:mod:`.interrupts`)."""

from ding_lite.entry.cli.command import main

__all__ = ["main"]
