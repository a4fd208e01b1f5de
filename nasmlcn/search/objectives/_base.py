"""An objective of the search, and what counts as a trial that learned; the
objectives by name (``OBJECTIVES``, ``--objectives``), each added with
:func:`register_objective` where its value is defined (the built-in ones: ``_builtin``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.errors import SearchError
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    from nasmlcn.planning import Plan
    from nasmlcn.search.evaluators._base import Evaluation


@dataclass(frozen=True)
class Objective:
    """One objective.

    Attributes:
        name: Registry name (``latency``).
        direction: ``maximize`` or ``minimize``.
        metric: The name optuna-dashboard shows (with its unit).
        needs_training: Whether the value comes from the evaluator.
        value: ``value(plan, evaluation)``; ``evaluation`` is None when no
            objective needs training.
        description: One line for listings.
        cost_models: The cost models whose plans it is defined for (empty: all).
    """

    name: str
    direction: str
    metric: str
    needs_training: bool
    value: Callable[[Plan, Evaluation | None], float]
    description: str
    cost_models: tuple[str, ...] = ()


LEARNING_MARGIN = 0.1
"""The share of the way from chance to perfect accuracy a trial must go."""


def chance_accuracy(num_classes: int) -> float:
    """The accuracy of guessing one class of ``num_classes``."""
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    return 1.0 / num_classes


def learning_threshold(num_classes: int) -> float:
    """The accuracy a trial must reach to count as learning."""
    chance = chance_accuracy(num_classes)
    return chance + LEARNING_MARGIN * (1.0 - chance)


def learning_constraint(accuracy: float, num_classes: int) -> float:
    """The constraint's value: <= 0 when ``accuracy`` shows the model learned."""
    return learning_threshold(num_classes) - accuracy


ObjectiveValue = Callable[["Plan", "Evaluation | None"], float]
"""``value(plan, evaluation)``: a trial's value of an objective."""

OBJECTIVES: Registry[Objective] = Registry("objective")


def register_objective(
    name: str,
    direction: str,
    metric: str,
    description: str,
    *,
    needs_training: bool = False,
    cost_models: tuple[str, ...] = (),
) -> Callable[[ObjectiveValue], ObjectiveValue]:
    """Registers the decorated ``value(plan, evaluation)`` in ``OBJECTIVES`` as the
    :class:`Objective` ``name`` (``--objectives``); returns it unchanged."""

    def add(value: ObjectiveValue) -> ObjectiveValue:
        objective = Objective(
            name, direction, metric, needs_training, value, description, cost_models
        )
        OBJECTIVES.register(name, objective)
        return value

    return add


def check_cost_model(objectives: tuple[str, ...], cost_model: str) -> None:
    """Every named objective (unknown names are left to the search's setup) is
    defined for ``cost_model``.

    Raises:
        SearchError: One is not; the message names the cost models it needs.
    """
    for name in objectives:
        if name not in OBJECTIVES:
            continue
        needs = OBJECTIVES.get(name).cost_models
        if needs and cost_model not in needs:
            raise SearchError(
                f"objective {name!r} needs cost model {' or '.join(needs)}, not {cost_model!r}: "
                f"use ‹devices› {needs[0]} (a device with that cost model) or ‹cost_model› {needs[0]}"
            )
