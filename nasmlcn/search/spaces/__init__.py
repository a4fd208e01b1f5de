"""Search spaces (pure Python): declarative files in ``search_spaces/``, built by
kind (``buckets``, ``homogeneous``, ``table``, ``thesis``)."""

from __future__ import annotations

from nasmlcn.search.spaces import _buckets, _homogeneous, _table, _thesis
from nasmlcn.search.spaces._base import SPACE_KINDS, Candidate, SearchSpace, SpaceContext
from nasmlcn.search.spaces._files import available_spaces, load_space, space_dirs
from nasmlcn.search.spaces._values import space_changes

__all__ = [
    "SPACE_KINDS",
    "Candidate",
    "SearchSpace",
    "SpaceContext",
    "available_spaces",
    "load_space",
    "space_changes",
    "space_dirs",
]
