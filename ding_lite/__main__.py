"""``python -m ding_lite`` runs the ``ding-lite`` command."""

import sys

from ding_lite.entry.cli.command import main

sys.exit(main())
