"""An objective of the search, and what counts as a trial that learned.

The objectives themselves, by name, are ``OBJECTIVES``
(:mod:`nasmlcn.search._registries.objectives`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nasmlcn.planning import Plan
    from nasmlcn.search._types.evaluation import Evaluation


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
