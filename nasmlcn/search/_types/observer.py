"""The observer protocol: hooks into a search that the caller attaches (the CLI's
live display, the dashboard's notes, MLflow tracking); the search itself knows
nothing of them. A run is watched one way: the list of observers it is given."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from nasmlcn.planning import Plan
    from nasmlcn.search._types.evaluation import EpochReport
    from nasmlcn.search._types.outcome import SearchResult, SearchStart, TrialOutcome
    from nasmlcn.search._types.setup import SearchSetup
    from nasmlcn.study import Noise, Replicate

logger = logging.getLogger(__name__)


class SearchObserver:
    """Hooks into a search (the CLI's live display and the dashboard's notes are
    observers the CLI attaches); all no-ops here. An observer that raises stops
    nothing (the runner logs it and goes on), but in :meth:`on_checked`."""

    tracking_uri: str | None = None
    """The tracking URI an experiment tracker logs to (``SearchConfig.mlflow`` asks
    for one such observer); None for others."""

    def on_checked(self, setup: SearchSetup) -> None:
        """The configuration and devices are checked and nothing is written yet: an
        observer that opens something (a tracking store) opens it here. An error
        raised here stops the search before its study is made."""

    def on_study(self, study: optuna.Study) -> None:
        """The study, once it is created or loaded (before ``on_start``)."""

    def on_start(self, start: SearchStart) -> None:
        pass

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        pass

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        pass

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        pass

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        """The search trains trial ``number``'s model (``lanes``) once more for
        ``epochs`` epochs with another seed, to measure the noise of one run (a
        replicate, :mod:`nasmlcn.study._noise`: no trial; once per study)."""

    def on_replicate_end(self, replicate: Replicate, noise: Noise) -> None:
        """The replicate is stored; ``noise``: the study's estimate with it."""

    def on_wait(self, running: tuple[int, ...], grace: float) -> None:
        """Every trial left to run is claimed, by these RUNNING trials of other
        processes: the run waits for them to end, or to go silent for ``grace``
        seconds (a dead worker's), when it fails, queues and takes them. Told again
        when the running trials change."""

    def on_end(self, result: SearchResult) -> None:
        """After the last trial of this run (also after Ctrl-C or a time limit)."""

    def for_workers(self) -> tuple[SearchObserver | None, Callable[[], SearchObserver] | None]:
        """How this observer watches a run with worker processes: what watches in
        this process (it hears every worker's finished trials), and a picklable
        factory of what each worker attaches (None: nothing). By default it all
        stays in this process."""
        return self, None


class Observers(SearchObserver):
    """Several observers as one; an observer that fails is logged and skipped
    (the search never stops for a display or a note)."""

    def __init__(self, observers: Sequence[SearchObserver]) -> None:
        self.observers = list(observers)

    def _each(self, hook: str, *args: Any) -> None:
        for observer in self.observers:
            try:
                getattr(observer, hook)(*args)
            except KeyboardInterrupt:
                raise
            except Exception:
                logger.warning(
                    "observer %s failed in %s", type(observer).__name__, hook, exc_info=True
                )

    def on_checked(self, setup: SearchSetup) -> None:
        # not guarded: an observer that cannot start stops the search up front
        for observer in self.observers:
            observer.on_checked(setup)

    def on_study(self, study: optuna.Study) -> None:
        self._each("on_study", study)

    def on_start(self, start: SearchStart) -> None:
        self._each("on_start", start)

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        self._each("on_trial_start", number, index, lanes, plan)

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        # not guarded: an epoch callback may stop the trial on purpose
        for observer in self.observers:
            observer.on_epoch(number, report, epochs)

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        self._each("on_trial_end", outcome)

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        self._each("on_replicate_start", number, lanes, epochs)

    def on_replicate_end(self, replicate: Replicate, noise: Noise) -> None:
        self._each("on_replicate_end", replicate, noise)

    def on_wait(self, running: tuple[int, ...], grace: float) -> None:
        self._each("on_wait", running, grace)

    def on_end(self, result: SearchResult) -> None:
        self._each("on_end", result)
