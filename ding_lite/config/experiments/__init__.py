"""Bundled experiments: each module defines ``config``, the keys it changes from defaults."""
