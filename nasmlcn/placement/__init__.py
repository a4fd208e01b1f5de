"""Lane placement (pure Python): lanes -> devices, balancing step time within memory.

Strategies in :data:`PLACERS`: ``greedy`` (thesis Algorithm 3, default),
``random`` (the thesis's baseline) and ``optimal`` (exact, with a time limit and a
proven lower bound).
"""

from __future__ import annotations

from typing import Any

from nasmlcn.placement import _greedy, _optimal, _random
from nasmlcn.placement._base import PLACERS, Placer
from nasmlcn.placement._greedy import greedy_assignment
from nasmlcn.placement._problem import Placement, PlacementProblem

DEFAULT_PLACER = "greedy"

__all__ = [
    "DEFAULT_PLACER",
    "PLACERS",
    "Placement",
    "PlacementProblem",
    "Placer",
    "get_placer",
    "greedy_assignment",
]


def get_placer(name: str = DEFAULT_PLACER, **options: Any) -> Placer:
    """The placer registered as ``name``, built with ``options`` (e.g. ``time_limit``)."""
    return PLACERS.get(name)(**options)
