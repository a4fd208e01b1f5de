"""Where nasmlcn keeps files between runs: one rule for every cached thing."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR = Path("~/.cache/nasmlcn")


def cache_path(env: str, name: str) -> Path:
    """``$<env>`` when set and not empty, else ``~/.cache/nasmlcn/<name>``."""
    value = os.environ.get(env)
    if value:
        return Path(value)
    return CACHE_DIR.expanduser() / name
