"""``python -m ding_lite`` runs the ``ding-lite`` command."""

import sys

from ding_lite.entry.cli import main

sys.exit(main())
