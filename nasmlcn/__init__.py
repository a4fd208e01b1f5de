"""nasmlcn: hardware-aware neural architecture search for Multi-Lane Capsule Networks.

Importing ``nasmlcn`` is cheap and never imports torch: the planning layer (specs,
registries, lane syntax) is pure Python. The torch parts live in
:mod:`nasmlcn.models`, :mod:`nasmlcn.data` loaders and :mod:`nasmlcn.training`, and
are imported only when used.
"""

from __future__ import annotations

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
