"""Inference targets: accelerators whose per-layer latency, energy and memory of one
inference ``nasmlcn estimate --target NAME`` prints.

A target turns an architecture (an MLCN or CapsNet) into a per-layer estimate
with ``latency_s``, ``energy_j`` and ``memory_bytes``. Built-in: ``capsacc``
(NASCaps sec. 3.2, :mod:`nasmlcn.costs._capsacc`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nasmlcn.costs._capsacc import CapsAccEstimate, estimate_capsacc
from nasmlcn.registry import Registry
from nasmlcn.specs import ArchSpec


@dataclass(frozen=True)
class Target:
    """One inference target.

    Attributes:
        name: Registry name (``capsacc``).
        estimate: ``estimate(spec)``: the per-layer estimate of one inference.
        cost_model: The cost model of the target's catalog device (its lanes'
            costs in a search), or ``""`` if it has none.
        description: One line for listings.
    """

    name: str
    estimate: Callable[[ArchSpec], CapsAccEstimate]
    cost_model: str
    description: str


TARGETS: Registry[Target] = Registry("target")

TARGETS.register(
    "capsacc",
    Target(
        "capsacc",
        estimate_capsacc,
        "capsacc",
        "CapsAcc systolic array, 16x16 PEs at 3 ns (NASCaps eqs. 2-7, Table 1)",
    ),
)
