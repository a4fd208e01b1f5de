"""Parameter importances per objective (Optuna's default evaluator)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from nasmlcn.dashboard._extract._trials import StudyData

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

logger = logging.getLogger(__name__)


class Importances(NamedTuple):
    """Parameter importances per objective (Optuna's default evaluator), or why not."""

    objectives: tuple[str, ...]
    params: tuple[str, ...]
    """Parameters sorted by their largest importance over objectives, most first."""
    values: tuple[tuple[float, ...], ...]
    """``values[i][j]``: importance of ``params[j]`` for ``objectives[i]``."""
    skipped: str | None = None


def param_importances(study: optuna.Study, data: StudyData) -> Importances:
    """Optuna's parameter importances for every objective (its default evaluator,
    PED-ANOVA in Optuna 5). Never raises: when they cannot be computed (fewer than
    two completed trials, a single parameter value...), ``skipped`` says why."""
    import warnings

    from optuna.importance import get_param_importances

    done = data.complete
    if len(done) < 2:
        return Importances((), (), (), f"needs 2 completed trials, the study has {len(done)}")
    per_objective: list[dict[str, float]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(len(data.directions)):
                target = _objective_value(i, data.directions[i] == "maximize")
                per_objective.append(dict(get_param_importances(study, target=target)))
    except Exception as err:  # Optuna's evaluators raise on degenerate studies
        logger.info("parameter importances skipped: %s", err)
        return Importances((), (), (), f"could not be computed: {err}")
    params = sorted(
        {p for imp in per_objective for p in imp},
        key=lambda p: -max(imp.get(p, 0.0) for imp in per_objective),
    )
    if not params:
        return Importances((), (), (), "the study has no parameters")
    return Importances(
        data.metric_names,
        tuple(params),
        tuple(tuple(float(imp.get(p, 0.0)) for p in params) for imp in per_objective),
    )


def _objective_value(index: int, maximize: bool) -> Callable[[FrozenTrial], float]:
    """Objective ``index`` as a target to minimise: Optuna's default importance
    evaluator (PED-ANOVA) takes low ``target`` values as the good ones, so a
    maximised objective is negated. Without that, accuracy's panel showed what
    makes accuracy *low*: in an accuracy-vs-latency study the same small models
    that make latency low, so the panels of both objectives were alike."""
    sign = -1.0 if maximize else 1.0

    def value(trial: FrozenTrial) -> float:
        assert trial.values is not None
        return sign * trial.values[index]

    return value
