"""``python -m nasmlcn``."""

from nasmlcn.cli import run

raise SystemExit(run())
