"""Choosing from a study's answer: limits on objectives by name (``--max
latency=5ms,memory=2GiB``, ``--min accuracy=0.9``) and the front's knee.

A limit keeps the candidates (completed, feasible, no repeat) that meet it, and the
answer is then made of those: a trial beaten only by trials over the limit is on the
front of what is left. The knee is the front's trial nearest the ideal point once
each objective is scaled to [0, 1] over the front (0: the front's best value, 1: its
worst); with one objective it is the best trial. Ties go to the earlier one in the
answer's order (best first objective first).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn._setting import TIME_UNITS
from nasmlcn.errors import SearchError, option
from nasmlcn.study._front import R, best_of, candidates
from nasmlcn.study._values import objective_signs

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

PICKS = ("best", "knee")
"""What ``--pick`` takes: the best by the first objective, or the front's knee."""

_MEMORY = {"kib": 2**-10, "mib": 1.0, "gib": 2**10, "tib": 2**20, "kb": 1e3 / 2**20}
_MEMORY |= {"mb": 1e6 / 2**20, "gb": 1e9 / 2**20, "tb": 1e12 / 2**20}
_ENERGY = {"uj": 1e-3, "mj": 1.0, "j": 1e3}
_COUNT = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
UNITS_OF = {
    "s": (TIME_UNITS, "a time, e.g. 5ms", "us, ms, s, min"),
    "MiB": (_MEMORY, "a size, e.g. 2GiB or 512MiB", "KiB, MiB, GiB, TiB, KB, MB, GB, TB"),
    "mJ": (_ENERGY, "an energy, e.g. 90mJ", "uJ, mJ, J"),
}
"""By a metric name's unit suffix (``latency_s``): the units a limit may be given in,
as factors to the stored unit, and an example."""

_LIMIT = re.compile(r"^\s*([A-Za-z_]+)\s*=\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([^\s]*)\s*$")


@dataclass(frozen=True)
class Limit:
    """One limit on an objective: its metric name, the bound in the stored unit
    (seconds, MiB, mJ), whether it is an upper bound, and the text it was given as."""

    metric: str
    bound: float
    upper: bool
    text: str

    def holds(self, value: float) -> bool:
        return value <= self.bound if self.upper else value >= self.bound

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "max" if self.upper else "min": self.bound}


def parse_limits(text: str | None, metric_names: Sequence[str], *, upper: bool) -> list[Limit]:
    """The limits of ``--max`` (``upper``) or ``--min`` text: ``NAME=VALUE[UNIT]``,
    comma-separated, NAME an objective of the study (``latency`` or ``latency_s``).

    Raises:
        SearchError: A malformed part, a name that is no objective of the study, or a
            value in no unit the objective takes; the message names it.
    """
    flag = option("max") if upper else option("min")
    limits = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        match = _LIMIT.match(part)
        if match is None:
            raise SearchError(
                f"{flag} {part.strip()!r}: give NAME=VALUE, e.g. {flag} latency=5ms,memory=2GiB"
            )
        name, number, unit = match[1], float(match[2]), match[3]
        metric = _metric(name, metric_names, flag)
        limits.append(
            Limit(metric, number * _factor(metric, unit, part.strip(), flag), upper, part)
        )
    return limits


def _metric(name: str, metric_names: Sequence[str], flag: str) -> str:
    """The study's metric that ``name`` names: itself, or it less its unit suffix."""
    for metric in metric_names:
        if name in (metric, _short(metric)):
            return metric
    shown = ", ".join(_short(m) for m in metric_names)
    raise SearchError(f"{flag} {name!r} is no objective of this study; its objectives: {shown}")


def _short(metric: str) -> str:
    head, _, unit = metric.rpartition("_")
    return head if head and unit in UNITS_OF else metric


def _factor(metric: str, unit: str, part: str, flag: str) -> float:
    """The factor from ``unit`` to ``metric``'s stored unit."""
    suffix = metric.rpartition("_")[2] if metric.rpartition("_")[0] else ""
    if suffix in UNITS_OF:
        units, example, shown = UNITS_OF[suffix]
        factor = units.get(unit.lower() if suffix != "s" else unit)
        if factor is None:
            raise SearchError(
                f"{flag} {part!r}: give {_short(metric)} as {example} (units: {shown})"
            )
        return factor
    factor = _COUNT.get(unit.lower())
    if factor is None:
        raise SearchError(f"{flag} {part!r}: {metric} is a plain number (k and M allowed)")
    return factor


def within(
    trials: Sequence[FrozenTrial], metric_names: Sequence[str], limits: Sequence[Limit]
) -> list[FrozenTrial]:
    """The trials whose values meet every limit."""
    index = {name: i for i, name in enumerate(metric_names)}
    return [
        t
        for t in trials
        if t.values is not None and all(lim.holds(t.values[index[lim.metric]]) for lim in limits)
    ]


def answer_within(
    trials: Sequence[FrozenTrial],
    directions: Sequence[Any],
    metric_names: Sequence[str],
    limits: Sequence[Limit],
    top: int | None = 5,
) -> list[FrozenTrial]:
    """The answer (:func:`~nasmlcn.study.best_of`) of the candidates that meet ``limits``."""
    return best_of(within(candidates(trials), metric_names, limits), directions, top)


def knee(front: Sequence[R], directions: Sequence[Any]) -> R | None:
    """The trial of ``front`` nearest the ideal point, each objective scaled to [0, 1]
    over the front (module docstring); None for an empty front."""
    if not front:
        return None
    signs = objective_signs(directions)
    losses = [[s * v for s, v in zip(signs, t.values or (), strict=True)] for t in front]
    low = [min(column) for column in zip(*losses, strict=True)]
    high = [max(column) for column in zip(*losses, strict=True)]

    def distance(loss: Sequence[float]) -> float:
        scaled = [
            (x - a) / (b - a) if b > a else 0.0 for x, a, b in zip(loss, low, high, strict=True)
        ]
        return math.sqrt(sum(x * x for x in scaled))

    best = min(range(len(front)), key=lambda i: (distance(losses[i]), i))
    return front[best]


def pick(front: Sequence[R], directions: Sequence[Any], how: str) -> R | None:
    """The trial ``how`` (:data:`PICKS`) picks from ``front``, an answer's order.

    Raises:
        SearchError: ``how`` is no pick.
    """
    if how not in PICKS:
        raise SearchError(f"{option('pick')} {how!r}: choose one of: {', '.join(PICKS)}")
    if how == "knee":
        return knee(front, directions)
    return front[0] if front else None
