"""What every trial of one run shares: the checked setup, the study, the evaluator,
the pruner, the observers, the search's deadline and the check for a lost stop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import optuna

    from nasmlcn.search._types.evaluation import Evaluator
    from nasmlcn.search._types.observer import SearchObserver
    from nasmlcn.search._types.pruner import EpochPruner
    from nasmlcn.search._types.setup import SearchSetup


@dataclass(frozen=True)
class RunContext:
    """What every trial of one run shares."""

    setup: SearchSetup
    study: optuna.Study
    evaluator: Evaluator
    pruner: EpochPruner | None
    observer: SearchObserver
    deadline: float | None  # the search's --timeout, on time.perf_counter's clock
    stop_lost: Callable[[], None] = lambda: None  # a swallowed or converted stop, raised
