"""``python -m ding_lite`` runs the ``ding-lite`` command."""

import sys

from ding_lite.utils.stop import exit_quietly_while_loading

with exit_quietly_while_loading():
    from ding_lite.entry.cli.command import main

sys.exit(main())
