"""Which retrained models are as good as the best: the same seeds for every model,
paired differences, and an equivalence margin.

One training run is one noisy sample: on the default space at small fidelities the
models' means lie within a point or two while one run varies by several. So a model
is *tied* with the best only on evidence of equivalence: the 95 % Student t interval
of its paired difference to the best (over the seeds both were retrained with) lies
within ``+-margin``. An interval that holds 0 but reaches past the margin is
*undecided* (more seeds needed), not tied: with 3 seeds, a model 22 points worse on
average had the interval [-0.460, +0.011], which holds 0. An interval wholly below
the best's is *behind*; a model with fewer than two seeds in common with the best
is *one run* (no interval can be had).

The margin's default, :data:`TIE_MARGIN` (half a point of accuracy), is about what
separates the default space's models when they are retrained (within about 0.003 of
each other) and under the seed spread of one model at full scale (CapsNet 0.18 points
over 3 seeds): a difference a user would not trade a cost for.

Pure Python; the t quantile comes from scipy when an interval is made.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nasmlcn.stats import PairedInterval
    from nasmlcn.study._retrained import RetrainedModel

TIE_MARGIN = 0.005
"""The default equivalence margin (half a point of accuracy; see the module docstring)."""

CONFIDENCE = 0.95

BEST, TIED, UNDECIDED, BEHIND, ONE_RUN = "best", "tied", "undecided", "behind", "one run"
"""A model's standing against the best (see the module docstring)."""

PICKABLE = (BEST, TIED)
"""The standings of the models ``--pick lean`` chooses among."""


@dataclass(frozen=True)
class SeedFigures:
    """A model's test accuracies under one retraining protocol, by seed.

    Attributes:
        number: The trial.
        values: Test accuracy by seed.
    """

    number: int
    values: dict[int, float]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return math.fsum(self.values.values()) / len(self.values)

    def interval(self) -> tuple[float, float] | None:
        """The mean's 95 % Student t interval over the seeds (None: one seed)."""
        if self.n < 2:
            return None
        from scipy.stats import t

        values = list(self.values.values())
        mean = self.mean
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (self.n - 1))
        half = float(t.ppf(0.5 + CONFIDENCE / 2, self.n - 1)) * sd / math.sqrt(self.n)
        return mean - half, mean + half

    def to_dict(self) -> dict[str, Any]:
        interval = self.interval()
        return {
            "number": self.number,
            "mean": self.mean,
            "low": None if interval is None else interval[0],
            "high": None if interval is None else interval[1],
            "n": self.n,
            "per_seed": {str(seed): value for seed, value in sorted(self.values.items())},
        }


@dataclass(frozen=True)
class Standing:
    """A model against the best.

    Attributes:
        figures: Its figures over seeds.
        mark: :data:`BEST`, :data:`TIED`, :data:`UNDECIDED`, :data:`BEHIND` or
            :data:`ONE_RUN`.
        difference: Its paired difference to the best (this minus the best) over
            their common seeds; None for the best and for one run.
    """

    figures: SeedFigures
    mark: str
    difference: PairedInterval | None = None

    @property
    def number(self) -> int:
        return self.figures.number

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.figures.to_dict(),
            "mark": self.mark,
            "difference": None if self.difference is None else self.difference.to_dict(),
        }


def standings(figures: Sequence[SeedFigures], margin: float = TIE_MARGIN) -> list[Standing]:
    """Every model's standing against the best (the highest mean; of equal means the
    one with more seeds, then the lower trial number), best first, then by mean.

    Raises:
        ValueError: No figures, or a margin that is not > 0.
    """
    if not figures:
        raise ValueError("no retrained models to compare")
    if not margin > 0:
        raise ValueError(f"the tie margin must be > 0, got {margin!r}")
    ranked = sorted(figures, key=lambda f: (-f.mean, -f.n, f.number))
    best = ranked[0]
    return [Standing(best, BEST), *(_standing(f, best, margin) for f in ranked[1:])]


def _standing(figures: SeedFigures, best: SeedFigures, margin: float) -> Standing:
    from nasmlcn.stats import paired_interval

    common = sorted(set(figures.values) & set(best.values))
    if len(common) < 2:
        return Standing(figures, ONE_RUN)
    diff = paired_interval(
        [figures.values[s] for s in common], [best.values[s] for s in common], CONFIDENCE
    )
    if -margin <= diff.low and diff.high <= margin:
        mark = TIED
    elif diff.high < 0:
        mark = BEHIND
    else:
        mark = UNDECIDED
    return Standing(figures, mark, diff)


def cheapest(standing: Iterable[Standing], cost: Callable[[int], float | None]) -> Standing | None:
    """Of the best and the models tied with it, the one ``cost`` (by trial number)
    makes cheapest; a model without the figure is never picked (None: none has it).
    Equal costs go to the higher mean."""
    candidates = [
        (c, -s.figures.mean, s)
        for s in standing
        if s.mark in PICKABLE and (c := cost(s.number)) is not None
    ]
    return min(candidates, key=lambda x: (x[0], x[1]))[2] if candidates else None


def seed_figures(models: Iterable[RetrainedModel]) -> dict[tuple[Any, ...], list[SeedFigures]]:
    """The retrained models' figures by protocol (data, epochs, image limits, refit:
    :attr:`~nasmlcn.study.RetrainedModel.protocol_key`), each model's over the seeds
    it was given (a retraining with the search's own seeds pairs with nothing and is
    left out)."""
    grouped: dict[tuple[Any, ...], dict[int, dict[int, float]]] = {}
    for m in models:
        if m.given_seed is None:
            continue
        by_model = grouped.setdefault(m.protocol_key, {})
        by_model.setdefault(m.number, {})[m.given_seed] = m.test_accuracy
    return {
        key: [SeedFigures(n, values) for n, values in sorted(by_model.items())]
        for key, by_model in grouped.items()
    }


@dataclass(frozen=True)
class SeededAnswer:
    """A study's retrained models over seeds against the best, under one protocol.

    Attributes:
        recipe: The protocol's settings in words (``3 ep x 5,000 images``).
        standings: Each model against the best, best first.
        margin: The equivalence margin.
    """

    recipe: str
    standings: tuple[Standing, ...]
    margin: float

    def of(self, number: int) -> Standing | None:
        return next((s for s in self.standings if s.number == number), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "tie_margin": self.margin,
            "standings": [s.to_dict() for s in self.standings],
        }


def seeded_answer(info: Any, margin: float = TIE_MARGIN) -> SeededAnswer | None:
    """The study's retrained models (its ``nasmlcn`` attribute ``info``) over seeds
    against the best, under the protocol on the search's data that has the most
    models retrained with two seeds or more (then the one that trained most); None
    where no model has two seeds."""
    from nasmlcn.study._retrained import retrained_models
    from nasmlcn.study._study_record import search_dataset

    dataset = search_dataset(info)
    models = [m for m in retrained_models(info) if m.dataset == dataset]
    groups = {
        key: figures
        for key, figures in seed_figures(models).items()
        if any(f.n >= 2 for f in figures)
    }
    if not groups:
        return None

    def rank(key: tuple[Any, ...]) -> tuple[int, int]:
        most = max(m.training for m in models if m.protocol_key == key)
        return sum(f.n >= 2 for f in groups[key]), most

    key = max(groups, key=rank)
    recipe = next(m.recipe_text for m in models if m.protocol_key == key)
    return SeededAnswer(recipe, tuple(standings(groups[key], margin)), margin)
