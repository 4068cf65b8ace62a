"""``python -m ding_lite`` runs the ``ding-lite`` command."""

import os
import sys

# ``python -m`` put the current folder first on sys.path: a module there (a run dir's
# ``gymnasium.py``, ``pwn_mod.py``) would be imported in place of, or beside, what the
# command imports. Dropped before anything else is imported, as the ``ding-lite`` script
# never adds it. ding_lite itself is imported already, so a source checkout run without
# an install goes on finding its own modules.
if sys.path and not getattr(sys.flags, "safe_path", False) and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from ding_lite.utils.stop import exit_quietly_while_loading  # noqa: E402

with exit_quietly_while_loading():
    from ding_lite.entry.cli.command import main

sys.exit(main())
