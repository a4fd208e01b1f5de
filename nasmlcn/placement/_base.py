"""Placers: strategies that assign lanes to devices, in a registry."""

from __future__ import annotations

from abc import ABC, abstractmethod

from nasmlcn.placement._problem import Placement, PlacementProblem
from nasmlcn.registry import Registry


class Placer(ABC):
    """Assigns every lane to a device within memory.

    Subclasses implement :meth:`place`; it raises
    :class:`~nasmlcn.errors.PlacementError` naming the lane that does not fit
    (and the largest free memory left) when no placement is found.
    """

    name: str = ""
    randomised: bool = False
    """True when results vary with ``seed`` (comparisons then average several draws)."""

    def __init__(self, time_limit: float | None = None) -> None:
        # Every placer takes a time limit so callers can build any of them alike;
        # only searching placers use it.
        self.time_limit = time_limit

    @abstractmethod
    def place(self, problem: PlacementProblem, *, seed: int = 0) -> Placement:
        """A placement of ``problem``'s lanes (``seed`` for randomised placers)."""


PLACERS: Registry[type[Placer]] = Registry("placement strategy")
