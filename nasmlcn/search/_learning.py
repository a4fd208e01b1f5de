"""Whether a trained trial learned anything: its accuracy beats chance by a clear margin.

A model at chance accuracy (0.098 on Fashion-MNIST) is often the cheapest of a
study, so without this it sits on the accuracy-vs-cost Pareto front, ``retrain
--pareto`` trains it again and it squeezes every figure's accuracy axis. The
runner sets the constraint :data:`LEARNING_CONSTRAINT` on every trained trial:
``threshold - accuracy``, feasible (<= 0) when the trial learned. Optuna's Pareto
front and nasmlcn's best trials consider only feasible trials, so a trial that did
not learn stays in the study (its curve, its costs, its checkpoint) but is no
candidate; the figures and tables show it apart.

The threshold is chance (one over the number of classes) plus a tenth of the way
from chance to perfect: 0.19 for 10 classes, 0.55 for two. On a validation set of
1,000 images at 10 classes, chance's standard deviation is 0.0095, so 0.19 is
more than 9 of them above chance: no model that learned nothing reaches it by luck.
"""

from __future__ import annotations

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
