"""``python -m nasmlcn``."""

from nasmlcn.cli import main

raise SystemExit(main())
