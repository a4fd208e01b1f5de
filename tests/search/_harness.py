"""An in-process trial harness: a search run in the test's own process, on a SQLite
file in the test's folder, with a scripted evaluator, so the trial's decisions
(failures, Ctrl-C, pruning, time limits, repeats) are tested without worker
processes, training or sleeping.

- :class:`Scripted` says what one trial's training does: its validation curve (else
  the proxy's), the epoch after which it raises, and the seconds each epoch takes on
  the harness's clock;
- :class:`ScriptedEvaluator` plays the script, trial by trial (a trial without one
  trains as the proxy would), and keeps every request it was given;
- :class:`SkippingClock` makes an epoch "take" its seconds at once: ``time.perf_counter``
  runs on real time plus the seconds skipped, so limits in seconds are tested with
  margins of minutes;
- :class:`Harness` ties them to a test: ``harness.run(script, trials=4)`` runs a search
  with the proxy's configuration and the script, ``harness.trials()`` reads back what
  the study stored.

Only public names of :mod:`nasmlcn.search` and :mod:`nasmlcn.study` are used: the
harness does not pin the search's layout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from optuna.trial import FrozenTrial

from nasmlcn.search import (
    EpochCallback,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
    SearchConfig,
    SearchObserver,
    SearchResult,
    run_search,
)
from nasmlcn.study import TrialRecord, load_existing_study


class SkippingClock:
    """``time.perf_counter`` (patched for the test) on real time plus the seconds
    :meth:`skip` added."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = time.perf_counter
        self.skipped = 0.0
        monkeypatch.setattr(time, "perf_counter", self)

    def __call__(self) -> float:
        return self.real() + self.skipped

    def skip(self, seconds: float) -> None:
        self.skipped += seconds


@dataclass(frozen=True)
class Scripted:
    """What one trial's training does.

    Attributes:
        curve: Validation accuracy after each epoch (as many epochs as the search
            asks, the last value repeated); None: the proxy's curve.
        raises: Raised after ``at_epoch`` epochs (0: before the first).
        at_epoch: See ``raises``.
        seconds: Seconds each epoch takes on the harness's clock (none without one).
    """

    curve: Sequence[float] | None = None
    raises: BaseException | None = None
    at_epoch: int = 0
    seconds: float = 0.0


@dataclass
class ScriptedEvaluator:
    """Plays ``script[trial]`` (a trial number, as the request gives it: a retried
    trial gives the number it retries) or ``script(request)``; trains as the proxy
    otherwise."""

    script: Mapping[int, Scripted] | Callable[[EvalRequest], Scripted | None] = field(
        default_factory=dict
    )
    clock: SkippingClock | None = None
    requests: list[EvalRequest] = field(default_factory=list)
    name: str = "scripted"
    measured: bool = False
    checkpoints: bool = False

    def _scripted(self, request: EvalRequest) -> Scripted:
        if callable(self.script):
            return self.script(request) or Scripted()
        return self.script.get(request.trial, Scripted())

    def evaluate(self, request: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        self.requests.append(request)
        play = self._scripted(request)
        if play.curve is None:
            proxy = ProxyEvaluator().evaluate(request, lambda _: EpochDecision())
            curve: Sequence[float] = proxy.val_accuracy_per_epoch
        else:
            curve = play.curve
        start = time.perf_counter()
        seen: list[float] = []
        for epoch in range(1, request.epochs + 1):
            if play.raises is not None and epoch > play.at_epoch:
                raise play.raises
            if play.seconds and self.clock is not None:
                self.clock.skip(play.seconds)
            seen.append(curve[min(epoch, len(curve)) - 1])
            decision = on_epoch(EpochReport(epoch, seen[-1], time.perf_counter() - start))
            if not decision.goes_on:
                break
        if play.raises is not None and len(seen) == request.epochs <= play.at_epoch:
            raise play.raises  # after the last epoch
        return Evaluation(seen[-1], tuple(seen), time.perf_counter() - start)


class Harness:
    """A test's searches: one SQLite study ``s`` in ``folder``, the proxy's
    configuration (4xK80, 12GB, 3 epochs, no pruning unless asked), a scripted
    evaluator on a skipping clock."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.clock = SkippingClock(monkeypatch)
        self.evaluator = ScriptedEvaluator(clock=self.clock)

    @property
    def storage(self) -> str:
        return f"sqlite:///{self.folder / 'study.db'}"

    def config(self, **overrides: Any) -> SearchConfig:
        base: dict[str, Any] = {
            "evaluator": "proxy",
            "storage": self.storage,
            "study": "s",
            "trials": 3,
            "epochs": 3,
            "devices": "4xK80",
            "mem": "12GB",
            "prune": False,
        }
        return SearchConfig(**{**base, **overrides})

    def run(
        self,
        script: Mapping[int, Scripted] | Callable[[EvalRequest], Scripted | None] | None = None,
        observers: Sequence[SearchObserver] = (),
        **overrides: Any,
    ) -> SearchResult:
        """A search with ``overrides`` of :meth:`config`, its trials trained as
        ``script`` says."""
        if script is not None:
            self.evaluator.script = script
        return run_search(self.config(**overrides), list(observers), evaluator=self.evaluator)

    def trials(self) -> list[FrozenTrial]:
        """The study's trials, as stored."""
        return load_existing_study("s", self.storage).trials

    def records(self) -> list[TrialRecord]:
        """The study's trials as nasmlcn reads them."""
        return [TrialRecord.of(t) for t in self.trials()]


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    return Harness(tmp_path, monkeypatch)
