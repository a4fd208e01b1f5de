"""``--pick lean``: of the models as good as the best, the cheapest.

"As good as the best" needs evidence: with models retrained over seeds, the best and
the models tied with it (:mod:`nasmlcn.study._ties`: paired intervals within the
margin); without them, the models whose one search run lies within the search's own
noise of the best's (its replicate, :func:`nasmlcn.study.noise_estimate`), which is
weaker and said so. Of those, the cheapest by a figure ``best`` shows (``--prefer``),
by default the study's first cost objective, else the predicted whole training step.
A time that chooses between models is the whole training step (lanes and head:
``step``), never the lanes' makespan alone, unless the user names ``latency``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SearchError, option
from nasmlcn.study._pick import FIGURES, Limit, _metric, figure_value, within
from nasmlcn.study._ties import PICKABLE, SeededAnswer, cheapest

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

WHOLE_STEP = "step_time_s"
"""The figure a time objective chooses by: the predicted whole training step."""

_COST_OF_OBJECTIVE = {"latency_s": WHOLE_STEP}
"""A cost objective's figure for choosing: the lanes' makespan objective chooses by the
whole step it is part of."""


@dataclass(frozen=True)
class LeanPick:
    """What ``--pick lean`` chose, and why.

    Attributes:
        number: The picked trial.
        best: The best model (the highest retrained mean, or search run).
        among: The best and the models as good as it, that meet the limits.
        metric: The figure it is the cheapest by (a :attr:`Figure.metric`).
        what: That figure in words.
        cost: The picked trial's figure, in its stored unit.
        best_cost: The best's (None: the best has none, or misses the limits).
        evidence: How "as good as the best" was decided, in words.
    """

    number: int
    best: int
    among: tuple[int, ...]
    metric: str
    what: str
    cost: float
    best_cost: float | None
    evidence: str

    @property
    def ratio(self) -> float | None:
        """The picked trial's figure over the best's."""
        if self.best_cost is None or self.best_cost == 0:
            return None
        return self.cost / self.best_cost

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "best": self.best,
            "among": list(self.among),
            "prefer": self.metric,
            "prefer_is": self.what,
            "cost": self.cost,
            "best_cost": self.best_cost,
            "ratio_to_best": self.ratio,
            "evidence": self.evidence,
        }


def prefer_metric(prefer: str | None, metric_names: Sequence[str]) -> tuple[str, str]:
    """The figure ``--prefer`` names (any figure ``best`` shows), else the study's
    first cost objective's, else the predicted whole training step; and what it is.

    Raises:
        SearchError: No such figure ("did you mean").
    """
    if prefer is None:
        costs = [_COST_OF_OBJECTIVE.get(m, m) for m in metric_names[1:]]
        metric = costs[0] if costs else WHOLE_STEP
    else:
        metric, _ = _metric(prefer, metric_names, option("prefer"))
    figure = next((f for f in FIGURES if f.metric == metric), None)
    return metric, figure.what if figure is not None else "an objective of the study"


def lean_pick(
    study: optuna.Study,
    metric_names: Sequence[str],
    answer: SeededAnswer | None,
    noise: Any,
    *,
    prefer: str | None = None,
    limits: Sequence[Limit] = (),
) -> LeanPick:
    """The cheapest by ``prefer`` of the models as good as the best (see the module
    docstring): by ``answer`` where there is one, else by the search's ``noise``
    (:class:`nasmlcn.study.Noise`; None: not measured).

    Raises:
        SearchError: Nothing to choose between (one model, no evidence), a figure no
            candidate has, or no candidate that meets the limits.
    """
    metric, what = prefer_metric(prefer, metric_names)
    trials = {t.number: t for t in study.get_trials(deepcopy=False) if t.values is not None}
    if answer is not None:
        among, best, evidence = _tied(answer)
    else:
        among, best, evidence = _within_noise(list(trials.values()), noise, study)
    kept = {t.number for t in within([trials[n] for n in among], metric_names, limits)}
    if not kept:
        raise SearchError(
            f"{option('pick')} lean: none of the models as good as the best ("
            + ", ".join(f"#{n}" for n in among)
            + ") meets the limits; loosen them"
        )

    def cost(number: int) -> float | None:
        return figure_value(trials[number], metric, metric_names) if number in kept else None

    return _cheapest(answer, among, best, cost, (metric, what, evidence))


def _cheapest(
    answer: SeededAnswer | None,
    among: Sequence[int],
    best: int,
    cost: Any,
    said: tuple[str, str, str],
) -> LeanPick:
    metric, what, evidence = said
    if answer is not None:
        chosen = cheapest(answer.standings, cost)
        number = None if chosen is None else chosen.number
    else:
        costed = [(c, n) for n in among if (c := cost(n)) is not None]
        number = min(costed)[1] if costed else None
    if number is None:
        raise SearchError(
            f"{option('prefer')} {metric}: none of the models as good as the best has this "
            "figure; name another (step, inference, memory, params)"
        )
    return LeanPick(number, best, tuple(among), metric, what, cost(number), cost(best), evidence)


def _tied(answer: SeededAnswer) -> tuple[list[int], int, str]:
    among = [s.number for s in answer.standings if s.mark in PICKABLE]
    seeds = max(s.figures.n for s in answer.standings)
    if len(answer.standings) < 2:
        raise SearchError(
            f"{option('pick')} lean chooses the cheapest of the models tied with the best, and "
            f"one model was retrained over seeds; retrain more of them with {option('seeds')}"
        )
    return (
        among,
        answer.standings[0].number,
        f"tied with the best over {seeds} retrained seeds ({answer.recipe}; paired 95 % "
        f"intervals within +-{answer.margin:g})",
    )


def _within_noise(
    trials: list[FrozenTrial], noise: Any, study: optuna.Study
) -> tuple[list[int], int, str]:
    from nasmlcn.study._front import best_of, candidates

    # by the first objective alone: the models near the best's accuracy, whatever their cost
    ranked = best_of(candidates(trials), study.directions[:1], top=None)
    if len(ranked) < 2:
        raise SearchError(
            f"{option('pick')} lean chooses the cheapest of the models as good as the best; study "
            f"{study.study_name!r} has {len(ranked)} model(s) to choose from"
        )
    if noise is None:
        raise SearchError(
            f"{option('pick')} lean needs evidence of which models are as good as the best: "
            f"retrain them over seeds (retrain {option('seeds')} 3), or search with "
            f"{option('replicate_after')} above 0 (the search's noise estimate); this study "
            "has neither"
        )
    best = ranked[0]
    top = (best.values or [0.0])[0]
    among = [t.number for t in ranked if noise.within(top, (t.values or [0.0])[0])]
    return (
        among,
        best.number,
        f"within the search's noise of the best's one run (sd {noise.sd:.4f} from "
        f"{noise.pairs} replicate pair(s); weaker evidence than retrained seeds)",
    )
