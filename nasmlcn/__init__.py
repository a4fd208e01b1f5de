"""nasmlcn: hardware-aware neural architecture search for Multi-Lane Capsule Networks.

Importing ``nasmlcn`` is cheap and never imports torch: the planning layer (specs,
registries, lane syntax) is pure Python. The torch parts live in
:mod:`nasmlcn.models`, :mod:`nasmlcn.data` loaders and :mod:`nasmlcn.training`, and
are imported only when used.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

from nasmlcn.errors import NasmlcnError
from nasmlcn.specs import (
    ARCH_SCHEMA_VERSION,
    CapsNetSpec,
    LaneSpec,
    MLCNSpec,
    format_lanes,
    load_arch,
    parse_lanes,
)

# A library prints nothing of its own: without this, Python's last-resort handler
# writes nasmlcn's warnings (a trial queued again, an observer that failed) to the
# stderr of a program that configured no logging. The CLI and any program that
# configures logging still get them through the root logger.
logging.getLogger("nasmlcn").addHandler(logging.NullHandler())

__all__ = [
    "ARCH_SCHEMA_VERSION",
    "CapsNetSpec",
    "LaneSpec",
    "MLCNSpec",
    "NasmlcnError",
    "__version__",
    "format_lanes",
    "load_arch",
    "parse_lanes",
]
