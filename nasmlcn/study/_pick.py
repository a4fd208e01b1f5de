"""Choosing from a study's answer: limits on the figures ``nasmlcn best`` shows
(``--max latency=5ms,memory=2GiB``, ``--min accuracy=0.9``) and the front's knee.

A limit names a figure of :data:`FIGURES`, an objective of the study or not: the
predicted ``latency`` (training step), ``inference`` and ``memory`` on the target
devices, ``params``, ``energy``, ``lanes``, ``imbalance``, the validation
``accuracy``, or ``measured_inference`` (measured where the trial trained); an
objective is compared by its objective value. A value takes the figure's units, and
a time or a size must say its unit (``latency=5`` is refused, as
``--latency-budget 5`` is: 5 s or 5 ms?).

A limit keeps the candidates (completed, feasible, no repeat) that meet it (a trial
without the figure does not), and the answer is then made of those, by the study's
objectives: a trial beaten only by trials over the limit is on the front of what is
left. The knee is the front's trial nearest the ideal point once each objective is
scaled to [0, 1] over the front (0: the front's best value, 1: its worst); with one
objective it is the best trial. Ties go to the earlier one in the answer's order
(best first objective first).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn._setting import GIVE_A_TIME_UNIT, TIME_UNITS
from nasmlcn.errors import SearchError, option
from nasmlcn.registry import did_you_mean
from nasmlcn.study._front import R, best_of, candidates
from nasmlcn.study._trial import TrialRecord
from nasmlcn.study._values import number, objective_signs

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

PICKS = ("best", "knee", "lean")
"""What ``--pick`` takes: the best by the first objective, the front's knee, or the
cheapest of the models as good as the best (:func:`nasmlcn.study.lean_pick`)."""

_MEMORY = {"b": 2**-20, "kib": 2**-10, "mib": 1.0, "gib": 2**10, "tib": 2**20}
_MEMORY |= {"kb": 1e3 / 2**20, "mb": 1e6 / 2**20, "gb": 1e9 / 2**20, "tb": 1e12 / 2**20}
UNITS_OF: dict[str, tuple[Mapping[str, float], str, str]] = {
    "time": (TIME_UNITS, "a time, e.g. 5ms or 5s", "us, ms, s, min"),
    "size": (_MEMORY, "a size, e.g. 2GiB or 512MiB", "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB"),
    "energy": ({"uj": 1e-3, "mj": 1.0, "j": 1e3}, "an energy, e.g. 90mJ", "uJ, mJ, J"),
    "count": ({"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}, "a count, e.g. 500k or 2M", "k, M, G"),
    "fraction": ({"": 1.0, "%": 0.01}, "a fraction, e.g. 0.9 or 90%", "%"),
    "percent": ({"%": 0.01}, "a percent, e.g. 5%", "%"),
}
"""By a figure's kind: the units a limit may give it in, as factors to the stored
unit (seconds, MiB, mJ, a count, a fraction), how to write one, and the units."""


def _predicted(key: str, scale: float = 1.0) -> Callable[[TrialRecord], float | None]:
    def read(record: TrialRecord) -> float | None:
        value = number(record.predicted.get(key))
        return None if value is None else value * scale

    return read


def _last_accuracy(record: TrialRecord) -> float | None:
    curve = record.accuracy_per_epoch
    return curve[-1] if curve else None


@dataclass(frozen=True)
class Figure:
    """A figure of a trial that ``nasmlcn best`` shows, which a limit may bound.

    Attributes:
        name: What a limit calls it (``latency``).
        metric: Its name as an objective's metric, in its stored unit
            (``latency_s``); a limit takes that name too.
        kind: Its units: a key of :data:`UNITS_OF` (``time``: a prediction, in the
            cost model's time unit, seconds but for ``thesis``), or ``seconds`` (a
            time measured where the trial trained, whatever the cost model).
        what: What it is, said beside a limit on it.
        read: The figure in its stored unit from a trial's record, for a study that
            has it as no objective; None where the trial has none.
        absent: Why no trial of a study may have it.
    """

    name: str
    metric: str
    kind: str
    what: str
    read: Callable[[TrialRecord], float | None]
    absent: str = ""


FIGURES = (
    Figure("accuracy", "accuracy", "fraction", "validation", _last_accuracy),
    Figure("latency", "latency_s", "time", "predicted lanes' step", _predicted("latency")),
    Figure(
        "step",
        "step_time_s",
        "time",
        "predicted whole training step: lanes and head",
        _predicted("step_time"),
    ),
    Figure(
        "inference",
        "inference_latency_s",
        "time",
        "predicted, one image",
        _predicted("inference_latency_s"),
    ),
    Figure("memory", "memory_MiB", "size", "predicted", _predicted("peak_memory_bytes", 2**-20)),
    Figure("params", "params", "count", "", _predicted("params")),
    Figure(
        "energy",
        "energy_mJ",
        "energy",
        "predicted",
        lambda _: None,
        "it is predicted only as an objective: --objectives ...,energy, on capsacc devices",
    ),
    Figure("lanes", "num_lanes", "count", "", lambda r: number(r.num_lanes)),
    Figure("imbalance", "imbalance", "percent", "predicted", _predicted("imbalance")),
    Figure(
        "measured_inference",
        "measured_inference_latency_s",
        "seconds",
        "measured where trained",
        lambda r: number(r.training.get("measured_inference_latency_s")),
        "only --evaluator train measures it, after training",
    ),
)
"""Every figure a limit may name: those ``nasmlcn best`` shows. The predicted ones
are for the target devices; ``measured_inference`` was measured on the machine that
trained the trial."""

_BY_METRIC = {f.metric: f for f in FIGURES}

_LIMIT = re.compile(r"^\s*([A-Za-z_]+)\s*=\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([^\s]*)\s*$")


@dataclass(frozen=True)
class Limit:
    """One limit on a figure: its metric name (:attr:`Figure.metric`, or an objective
    of the study), the bound in the stored unit (seconds, MiB, mJ, a fraction),
    whether it is an upper bound, the text it was given as, and what the figure is
    (``predicted lanes' step``)."""

    metric: str
    bound: float
    upper: bool
    text: str
    what: str = ""

    def holds(self, value: float | None) -> bool:
        """Whether ``value`` meets the limit (no value does not)."""
        if value is None:
            return False
        return value <= self.bound if self.upper else value >= self.bound

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "max" if self.upper else "min": self.bound}

    @property
    def flag(self) -> str:
        return option("max") if self.upper else option("min")


def parse_limits(
    text: str | None, metric_names: Sequence[str], *, upper: bool, time_unit: str = "s"
) -> list[Limit]:
    """The limits of ``--max`` (``upper``) or ``--min`` text: ``NAME=VALUE[UNIT]``,
    comma-separated, NAME a figure of :data:`FIGURES` (``latency`` or
    ``latency_s``) or an objective of the study.

    Args:
        text: What the option was given.
        metric_names: The study's objectives.
        upper: ``--max`` (else ``--min``).
        time_unit: The study's cost model's unit of predicted times (``s``).

    Raises:
        SearchError: A malformed part, an unknown name (with the names taken), or a
            value in no unit the figure takes; the message names it.
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
        metric, figure = _metric(match[1], metric_names, flag)
        kind = figure.kind if figure is not None else "count"
        bound = _bound(kind, float(match[2]), match[3], (flag, part.strip(), time_unit))
        what = figure.what if figure is not None else ""
        limits.append(Limit(metric, bound, upper, part.strip(), what))
    return limits


def _metric(name: str, metric_names: Sequence[str], flag: str) -> tuple[str, Figure | None]:
    """The metric ``name`` names (a figure's, or an objective of the study, itself or
    less its unit suffix), and its figure (None: an objective of no figure)."""
    for figure in FIGURES:
        if name.lower() in (figure.name, figure.metric.lower()):
            return figure.metric, figure
    for metric in metric_names:
        if name in (metric, _short(metric)):
            return metric, None
    taken = list(dict.fromkeys([f.name for f in FIGURES] + [_short(m) for m in metric_names]))
    shown = ", ".join(taken)
    hint = did_you_mean(name, taken, otherwise="", fold=str.lower)
    raise SearchError(
        f"{flag} {name!r} is no figure of best's table; {hint + ' ' if hint else ''}"
        f"names taken: {shown}"
    )


def _short(metric: str) -> str:
    figure = _BY_METRIC.get(metric)
    return figure.name if figure is not None else metric


def _bound(kind: str, value: float, unit: str, where: tuple[str, str, str]) -> float:
    """``value`` ``unit`` in the stored unit of a figure of ``kind`` (``where``: the
    option, the part as given and the study's time unit, for the messages)."""
    flag, part, time_unit = where
    name = part.partition("=")[0].strip()
    if kind == "time" and time_unit != "s":  # the thesis's w2d: no seconds to convert
        if unit != time_unit:
            raise SearchError(
                f"{flag} {part!r}: this study predicts times in {time_unit} (its cost "
                f"model's unit); give {name} in it, e.g. {name}=2{time_unit}"
            )
        return value
    if kind in ("time", "seconds"):
        if not unit:  # 5 s or 5 ms? as --latency-budget, ask
            raise SearchError(f"{flag} {part!r} has no unit; {GIVE_A_TIME_UNIT}")
        kind = "time"
    units, example, shown = UNITS_OF[kind]
    factor = units.get(unit if kind == "time" else unit.lower())
    if factor is None or (kind == "fraction" and value * factor > 1):
        raise SearchError(f"{flag} {part!r}: give {name} as {example} (units: {shown})")
    return value * factor


def figure_value(trial: FrozenTrial, metric: str, metric_names: Sequence[str]) -> float | None:
    """``trial``'s figure ``metric`` (a :attr:`Figure.metric` or an objective) in its
    stored unit: its objective value where it is an objective of the study (of
    ``metric_names``), else read from its record; None where it has none."""
    if metric in metric_names:
        values = trial.values
        return number(values[list(metric_names).index(metric)]) if values else None
    figure = _BY_METRIC.get(metric)
    return figure.read(TrialRecord.of(trial)) if figure is not None else None


def within(
    trials: Sequence[FrozenTrial], metric_names: Sequence[str], limits: Sequence[Limit]
) -> list[FrozenTrial]:
    """The trials with values whose figures meet every limit."""
    return [
        t
        for t in trials
        if t.values is not None
        and all(lim.holds(figure_value(t, lim.metric, metric_names)) for lim in limits)
    ]


def answer_within(
    trials: Sequence[FrozenTrial],
    directions: Sequence[Any],
    metric_names: Sequence[str],
    limits: Sequence[Limit],
    top: int | None = 5,
) -> list[FrozenTrial]:
    """The answer (:func:`~nasmlcn.study.best_of`) of the candidates that meet ``limits``.

    Raises:
        SearchError: A limit on a figure that no candidate has (energy in a study
            without that objective, a measured time where nothing was measured):
            every trial would be left out for want of it, not for being over it.
    """
    chosen = candidates(trials)
    for limit in limits:
        if chosen and all(figure_value(t, limit.metric, metric_names) is None for t in chosen):
            figure = _BY_METRIC.get(limit.metric)
            why = f" ({figure.absent})" if figure is not None and figure.absent else ""
            raise SearchError(
                f"{limit.flag} {limit.text!r}: none of the {len(chosen)} completed feasible "
                f"trials has this figure{why}"
            )
    return best_of(within(chosen, metric_names, limits), directions, top)


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
    if how == "lean":  # it needs the retrained figures or the noise: not a front's order
        raise SearchError(f"{option('pick')} lean is made by lean_pick, from the study itself")
    return front[0] if front else None
